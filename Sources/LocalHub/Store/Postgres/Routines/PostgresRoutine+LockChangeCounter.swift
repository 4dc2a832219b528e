extension PostgresRoutine {
    /// The rule a batch resolved at a position (`Resolution`) is committed by, in one place:
    /// every batch that logs changes calls it before it writes a row. With a resolution, the
    /// batch is checked first against what is committed, outside the counter's lock; then the
    /// change log's counter is locked (to the end of the transaction, so commits are numbered
    /// in the order they become visible), and the batch is checked again against the changes
    /// committed since (few, so others wait little). Each statement reads what was committed
    /// before it began: the one after the lock sees what its holder committed. A batch is
    /// moved when a change after its position names a record it read (`changed_since`), or
    /// more changes came after it than its room. `head` is the counter's value, locked (null
    /// when moved before the lock); without the counter (a database this version did not
    /// migrate) it raises.
    static let lockChangeCounter = PostgresRoutine(
        name: "lock_change_counter",
        definition: """
            CREATE OR REPLACE FUNCTION lock_change_counter(
                resolved_at bigint, room bigint, read_kinds text[], read_hubs text[], read_ids text[], read_exact boolean[],
                OUT head bigint, OUT moved boolean)
            LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
            DECLARE
                seen bigint;
            BEGIN
                moved := false;
                IF resolved_at IS NOT NULL THEN
                    SELECT change_seq INTO seen FROM change_counter;
                    IF seen - resolved_at > room OR (seen > resolved_at
                        AND changed_since(resolved_at, seen, read_kinds, read_hubs, read_ids, read_exact)) THEN
                        moved := true;
                        RETURN;
                    END IF;
                END IF;
                SELECT change_seq INTO head FROM change_counter FOR UPDATE;
                IF head IS NULL THEN
                    RAISE EXCEPTION 'the change log has no counter (change_counter)';
                END IF;
                moved := resolved_at IS NOT NULL AND head > seen AND (head - resolved_at > room
                    OR changed_since(seen, head, read_kinds, read_hubs, read_ids, read_exact));
            END
            $$
            """)
}
