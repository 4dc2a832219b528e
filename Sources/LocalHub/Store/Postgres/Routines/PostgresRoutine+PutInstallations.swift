extension PostgresRoutine {
    /// A batch of installation upserts alone, checked (`lock_change_counter`, the rule every
    /// batch is committed by) and written in one call. Returns the last change-log number
    /// taken, or null when the resolution moved.
    static let putInstallations = PostgresRoutine(
        name: "put_installations",
        definition: """
            CREATE OR REPLACE FUNCTION put_installations(
                hubs text[], ids text[], bodies text[], change_hubs text[], change_ids text[], wake text,
                resolved_at bigint, room bigint, read_kinds text[], read_hubs text[], read_ids text[], read_exact boolean[])
            RETURNS bigint LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
            DECLARE
                head bigint;
                moved boolean;
            BEGIN
                SELECT l.head, l.moved INTO head, moved
                FROM lock_change_counter(resolved_at, room, read_kinds, read_hubs, read_ids, read_exact) AS l;
                IF moved THEN
                    RETURN NULL;
                END IF;
                UPDATE change_counter SET change_seq = head + cardinality(change_ids);
                INSERT INTO installation (hub, id, json) SELECT * FROM unnest(hubs, ids, bodies)
                    ON CONFLICT (hub, id) DO UPDATE SET json = excluded.json;
                INSERT INTO change (seq, kind, hub, id)
                    SELECT head + c.n, '\(ChangeKind.installation.code)', c.h, c.i FROM unnest(change_hubs, change_ids) WITH ORDINALITY AS c(h, i, n);
                PERFORM pg_notify('hub_wake', wake);
                RETURN head + cardinality(change_ids);
            END
            $$
            """)
}
