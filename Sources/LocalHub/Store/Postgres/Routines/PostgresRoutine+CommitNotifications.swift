extension PostgresRoutine {
    /// `insert_notifications`, committed in the call (a batch of sends alone).
    static let commitNotifications = PostgresRoutine(
        name: "commit_notifications",
        definition: """
            CREATE OR REPLACE PROCEDURE commit_notifications(
                hubs text[], ids text[], formats text[], tag_lists text[], untagged boolean[], bodies text[],
                header_texts text[], handles text[], unhandled boolean[], tests boolean[], enqueued_times double precision[],
                state_names text[], start_times double precision[], end_times double precision[], outcome_counts text[],
                fire_times double precision[], handle_lists text[], unlisted boolean[], owned_by text,
                leased_until double precision) LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM insert_notifications(hubs, ids, formats, tag_lists, untagged, bodies, header_texts, handles, unhandled, tests,
                    enqueued_times, state_names, start_times, end_times, outcome_counts, fire_times, handle_lists, unlisted,
                    owned_by, leased_until);
                COMMIT;
            END
            $$
            """)
}
