extension PostgresRoutine {
    /// A batch of installation upserts alone resolved at the head, committed in the call:
    /// written only if nothing was committed after the position (checked on the counter's
    /// row, under its lock); `last` is the last number taken, or null when something was.
    static let commitPutAtHead = PostgresRoutine(
        name: "commit_put_at_head",
        definition: """
            CREATE OR REPLACE PROCEDURE commit_put_at_head(
                hubs text[], ids text[], bodies text[], change_count bigint, change_hubs text[], change_ids text[], wake text,
                head_at bigint, INOUT last bigint) LANGUAGE plpgsql AS $$
            BEGIN
                WITH numbered AS (
                    UPDATE change_counter SET change_seq = change_seq + change_count
                    WHERE change_seq = head_at
                    RETURNING change_seq AS top),
                upserted AS (
                    INSERT INTO installation (hub, id, json)
                    SELECT u.h, u.i, u.j FROM numbered, unnest(hubs, ids, bodies) AS u(h, i, j)
                    ON CONFLICT (hub, id) DO UPDATE SET json = excluded.json),
                added AS (
                    INSERT INTO change (seq, kind, hub, id)
                    SELECT numbered.top - change_count + c.n, '\(ChangeKind.installation.code)', c.h, c.i
                    FROM numbered, unnest(change_hubs, change_ids) WITH ORDINALITY AS c(h, i, n))
                SELECT numbered.top INTO last FROM numbered;
                IF last IS NOT NULL THEN
                    PERFORM pg_notify('hub_wake', wake);
                END IF;
                COMMIT;
            END
            $$
            """)
}
