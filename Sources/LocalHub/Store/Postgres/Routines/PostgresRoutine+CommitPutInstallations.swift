extension PostgresRoutine {
    /// `put_installations`, committed in the call.
    static let commitPutInstallations = PostgresRoutine(
        name: "commit_put_installations",
        definition: """
            CREATE OR REPLACE PROCEDURE commit_put_installations(
                hubs text[], ids text[], bodies text[], change_hubs text[], change_ids text[], wake text,
                resolved_at bigint, room bigint, read_kinds text[], read_hubs text[], read_ids text[], read_exact boolean[],
                INOUT last bigint) LANGUAGE plpgsql AS $$
            BEGIN
                last := put_installations(hubs, ids, bodies, change_hubs, change_ids, wake,
                    resolved_at, room, read_kinds, read_hubs, read_ids, read_exact);
                COMMIT;
            END
            $$
            """)
}
