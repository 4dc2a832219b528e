extension PostgresRoutine {
    /// Notifications inserted, claimed by the node that accepted them (a batch with other
    /// writes calls the function, in its transaction). Absent values travel as a flag beside
    /// an empty text, or as NaN for times. PL/pgSQL, whose plan a session keeps (a SQL
    /// function's body is planned again at every call).
    static let insertNotifications = PostgresRoutine(
        name: "insert_notifications",
        definition: """
            CREATE OR REPLACE FUNCTION insert_notifications(
                hubs text[], ids text[], formats text[], tag_lists text[], untagged boolean[], bodies text[],
                header_texts text[], handles text[], unhandled boolean[], tests boolean[], enqueued_times double precision[],
                state_names text[], start_times double precision[], end_times double precision[], outcome_counts text[],
                fire_times double precision[], handle_lists text[], unlisted boolean[], owned_by text,
                leased_until double precision) RETURNS void LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO notification (hub, id, format, tags, body, headers, direct_handle, test, enqueued, state,
                    started, ended, outcome, fire_at, direct_handles, owner, lease_until)
                SELECT h, i, f, CASE WHEN tn THEN NULL ELSE t END, b, hd, CASE WHEN dn THEN NULL ELSE d END, x, e, s,
                    NULLIF(st, 'NaN'), NULLIF(en, 'NaN'), o, NULLIF(fa, 'NaN'), CASE WHEN bn THEN NULL ELSE bh END,
                    owned_by, leased_until
                FROM unnest(hubs, ids, formats, tag_lists, untagged, bodies, header_texts, handles, unhandled, tests,
                    enqueued_times, state_names, start_times, end_times, outcome_counts, fire_times, handle_lists, unlisted)
                    AS n(h, i, f, t, tn, b, hd, d, dn, x, e, s, st, en, o, fa, bh, bn);
            END
            $$
            """)
}
