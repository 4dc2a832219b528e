extension PostgresRoutine {
    /// Whether a change after `after`, through `through`, names a record a batch read
    /// (`Resolution.Read`), or changes after it were pruned (which cannot be checked). Ids and
    /// hubs are ASCII (`HubId`): lower() in the "C" collation folds them as the hub does,
    /// whatever the database's locale. It keeps one generic plan that reads a range of the
    /// change log's key (by index only, never compiled: `byIndexOnly`).
    static let changedSince = PostgresRoutine(
        name: "changed_since",
        definition: """
            CREATE OR REPLACE FUNCTION changed_since(
                after bigint, through bigint, kinds text[], hubs text[], ids text[], exact boolean[])
            RETURNS boolean LANGUAGE plpgsql STABLE
            SET plan_cache_mode = force_generic_plan \(PostgresRoutine.byIndexOnly) AS $$
            BEGIN
                -- Changes after the position that were pruned cannot be checked.
                IF COALESCE((SELECT change_pruned FROM change_counter), 0) > after THEN
                    RETURN true;
                END IF;
                RETURN EXISTS (
                    SELECT 1 FROM change c
                    JOIN unnest(kinds, hubs, ids, exact) AS r(k, h, i, x)
                        ON c.kind = r.k AND lower(c.id COLLATE "C") = lower(r.i COLLATE "C")
                        AND lower(c.hub COLLATE "C") = lower(r.h COLLATE "C") AND (r.x OR c.id <> r.i)
                    WHERE c.seq > after AND c.seq <= through);
            END
            $$
            """)
}
