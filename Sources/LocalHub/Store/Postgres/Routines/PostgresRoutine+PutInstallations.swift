extension PostgresRoutine {
    /// A batch of installation upserts alone, checked and written in one call: with a
    /// resolution, checked first against what is committed, outside the counter's lock, then,
    /// once it holds the lock, against the changes committed since (few, so others wait
    /// little). Each statement reads what was committed before it began. Returns the last
    /// change-log number taken, or null when the resolution moved.
    static let putInstallations = PostgresRoutine(
        name: "put_installations",
        definition: """
            CREATE OR REPLACE FUNCTION put_installations(
                hubs text[], ids text[], bodies text[], change_hubs text[], change_ids text[], wake text,
                resolved_at bigint, room bigint, read_kinds text[], read_hubs text[], read_ids text[], read_exact boolean[])
            RETURNS bigint LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
            DECLARE
                seen bigint;
                head bigint;
            BEGIN
                IF resolved_at IS NOT NULL THEN
                    SELECT change_seq INTO seen FROM change_counter;
                    IF seen - resolved_at > room OR (seen > resolved_at
                        AND changed_since(resolved_at, seen, read_kinds, read_hubs, read_ids, read_exact)) THEN
                        RETURN NULL;
                    END IF;
                END IF;
                SELECT change_seq INTO head FROM change_counter FOR UPDATE;
                IF head IS NULL THEN
                    RAISE EXCEPTION 'the change log has no counter (change_counter)';
                END IF;
                IF resolved_at IS NOT NULL AND head > seen AND (head - resolved_at > room
                    OR changed_since(seen, head, read_kinds, read_hubs, read_ids, read_exact)) THEN
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
