import Foundation
import PostgresNIO

/// The delivery log's epoch and its numbers on PostgreSQL: the durable high-water mark
/// (`meta` 'delivery_high', which `record_dispatches` moves) and the reservation.
extension PostgresHubStore {
    /// The epoch; one missing or unreadable is replaced by a new one (as on SQLite).
    public func epoch() async throws -> String {
        if let kept = try await rows("SELECT value FROM meta WHERE key = 'epoch'").first?["value"].decode(String.self),
            HubEpoch.isValid(kept)
        {
            return kept
        }
        let made = HubEpoch.make()
        _ = try await written(
            "INSERT INTO meta (key, value) VALUES ('epoch', \(made)) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
        SkippedRows.shared.skip(
            "the epoch in meta", QuarantineReason(description: "it is missing or unreadable; a new epoch \(made) begins"),
            logger: logger)
        return made
    }

    /// The highest number given: the durable mark, the last delivery written and the reservation
    /// (each checked: a value that is no number in range throws, and nothing is numbered past
    /// it). Read through indexes only: a stream that resumes far ahead asks it
    /// (`SharedDatabase.hasNumbered`). What retention told devices it removed is in the mark
    /// since `settleHighWater`.
    public func sequenceHighWater() async throws -> Int64 {
        let mark = try await rows(PostgresQuery(unsafeSQL: Self.highWater)).first?[0].decode(Int64?.self)
        guard let mark, StoredRange.sequence.contains(mark) else {
            throw StoreFailure(
                description:
                    "the delivery log's numbers reach \(mark.map(String.init) ?? "a value that is no number"), past 2^62: no delivery can be numbered after it",
                permanent: true)
        }
        return mark
    }

    /// The highest number given (`sequenceHighWater`), in one statement. A counter that holds
    /// no number fails its cast (a data exception: permanent).
    static let highWater = """
        SELECT GREATEST(
            (SELECT value::bigint FROM meta WHERE key = 'seq_reserved'), (SELECT value::bigint FROM meta WHERE key = 'delivery_high'),
            (SELECT COALESCE(MAX(seq), 0) FROM delivery))
        """

    /// Checks the durable mark at start against the rows, the gaps retention told and the
    /// reservation, raising it to the highest of them (and making it again when it is gone),
    /// so that numbering goes on above everything given whatever became of the row. A counter
    /// that holds no number is left as it is (its sends are abandoned, with the reason).
    func settleHighWater() async throws {
        _ = try await written(
            """
            INSERT INTO meta (key, value)
            SELECT 'delivery_high', GREATEST(
                (SELECT COALESCE(MAX(seq), 0) FROM delivery), (SELECT COALESCE(MAX(gap_through), 0) FROM device_gap),
                (SELECT CASE WHEN value ~ '^[0-9]{1,18}$' THEN value::bigint ELSE 0 END FROM meta WHERE key = 'seq_reserved'))::text
            ON CONFLICT (key) DO UPDATE SET value = excluded.value
            WHERE meta.value ~ '^[0-9]{1,18}$' AND meta.value::bigint < excluded.value::bigint
            RETURNING key
            """)
    }

    public func reserveSequence(through seq: Int64) async throws {
        guard StoredRange.sequence.contains(seq) else {
            throw StoreFailure(description: "delivery numbers through \(seq) would pass 2^62", permanent: true)
        }
        _ = try await written(
            "UPDATE meta SET value = \(String(seq)) WHERE key = 'seq_reserved' AND value::bigint < \(seq) RETURNING key")
    }
}
