import Foundation

extension PostgresHubStore {
    /// The counters as typed columns of single-row tables, in place of text in the key/value
    /// `meta` (cast at every commit): the change log's (`change_counter`: its last number and
    /// the point it was pruned through), whose row every commit that logs changes locks to its
    /// end, and the delivery log's (`delivery_counter`: its epoch, the reservation and the
    /// durable high-water mark), which every dispatch moves, so that neither waits on the
    /// other. The rows in `meta` are moved (a number kept as it was; one that is no number
    /// counts as 0, the change log's as its highest number) and the routines that read them
    /// installed again, with the batch check in one routine (`lock_change_counter`) that
    /// mixed batches call too; `meta` keeps the hubs' keys. Every node must run this version.
    static let countersTyped = Migration(
        name: "v13: counters in typed single-row tables",
        statements: [
            """
            CREATE TABLE change_counter (
                one boolean PRIMARY KEY DEFAULT true CHECK (one),
                change_seq bigint NOT NULL DEFAULT 0, change_pruned bigint NOT NULL DEFAULT 0)
            """,
            """
            CREATE TABLE delivery_counter (
                one boolean PRIMARY KEY DEFAULT true CHECK (one), epoch text,
                seq_reserved bigint NOT NULL DEFAULT 0, delivery_high bigint NOT NULL DEFAULT 0)
            """,
            """
            INSERT INTO change_counter (change_seq, change_pruned)
            SELECT GREATEST(\(kept("change_seq")), (SELECT COALESCE(MAX(seq), 0) FROM change)), \(kept("change_pruned"))
            """,
            """
            INSERT INTO delivery_counter (epoch, seq_reserved, delivery_high)
            SELECT (SELECT value FROM meta WHERE key = 'epoch'), \(kept("seq_reserved")), \(kept("delivery_high"))
            """,
            "DELETE FROM meta WHERE key IN ('epoch', 'change_seq', 'change_pruned', 'seq_reserved', 'delivery_high')",
            PostgresRoutine.changedSince.definition,
            PostgresRoutine.lockChangeCounter.definition,
            PostgresRoutine.putInstallations.definition,
            PostgresRoutine.commitPutAtHead.definition,
            PostgresRoutine.recordDispatches.definition,
        ])

    /// The number `meta` keeps under `key`, or 0 when it holds none (or no number).
    private static func kept(_ key: String) -> String {
        """
        COALESCE((
            SELECT CASE WHEN value ~ '^[0-9]{1,19}$' THEN CASE WHEN value::numeric < 2 ^ 63 THEN value::bigint END END
            FROM meta WHERE key = '\(key)'), 0)
        """
    }
}
