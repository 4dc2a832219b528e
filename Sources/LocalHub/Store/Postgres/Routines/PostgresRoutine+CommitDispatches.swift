extension PostgresRoutine {
    /// `record_dispatches`, committed in the call.
    static let commitDispatches = PostgresRoutine(
        name: "commit_dispatches",
        definition: """
            CREATE OR REPLACE PROCEDURE commit_dispatches(
                numbers bigint[], hubs text[], devices text[], notification_ids text[], template_names text[],
                payloads text[], times double precision[], tag_lists text[], untagged boolean[],
                state_ids text[], state_names text[], start_times double precision[], end_times double precision[],
                outcome_counts text[], report_texts text[], unreported boolean[], wake text,
                INOUT high bigint, INOUT skipped bigint[]) LANGUAGE plpgsql AS $$
            BEGIN
                SELECT r.high, r.skipped INTO high, skipped FROM record_dispatches(numbers, hubs, devices,
                    notification_ids, template_names, payloads, times, tag_lists, untagged, state_ids, state_names,
                    start_times, end_times, outcome_counts, report_texts, unreported, wake) AS r;
                COMMIT;
            END
            $$
            """)
}
