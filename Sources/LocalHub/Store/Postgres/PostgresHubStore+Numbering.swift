import Foundation
import PostgresNIO

/// The delivery log's epoch and its numbers on PostgreSQL: the durable high-water mark
/// (`delivery_counter.delivery_high`, which `record_dispatches` moves) and the reservation.
extension PostgresHubStore {
    /// The epoch; one missing or unreadable is replaced by a new one (as on SQLite).
    public func epoch() async throws -> String {
        if let kept = try await rows("SELECT epoch FROM delivery_counter").first?["epoch"].decode(String?.self),
            HubEpoch.isValid(kept)
        {
            return kept
        }
        let made = HubEpoch.make()
        _ = try await written(
            """
            INSERT INTO delivery_counter (epoch) VALUES (\(made))
            ON CONFLICT (one) DO UPDATE SET epoch = excluded.epoch RETURNING one
            """)
        SkippedRows.shared.skip(
            "the epoch in delivery_counter",
            QuarantineReason(description: "it is missing or unreadable; a new epoch \(made) begins"), logger: logger)
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

    /// The highest number given (`sequenceHighWater`), in one statement.
    static let highWater = """
        SELECT GREATEST(
            (SELECT GREATEST(seq_reserved, delivery_high) FROM delivery_counter), (SELECT COALESCE(MAX(seq), 0) FROM delivery),
            (SELECT COALESCE(MAX(seq), 0) FROM delivery_v1))
        """

    /// Checks the durable mark at start against the rows, the gaps retention told and the
    /// reservation, raising it to the highest of them (and making the row again when it is
    /// gone), so that numbering goes on above everything given whatever became of the row.
    func settleHighWater() async throws {
        _ = try await written(
            """
            INSERT INTO delivery_counter (delivery_high)
            SELECT GREATEST((SELECT COALESCE(MAX(seq), 0) FROM delivery), (SELECT COALESCE(MAX(seq), 0) FROM delivery_v1),
                (SELECT COALESCE(MAX(gap_through), 0) FROM device_gap))
            ON CONFLICT (one) DO UPDATE
                SET delivery_high = GREATEST(delivery_counter.seq_reserved, excluded.delivery_high)
                WHERE delivery_counter.delivery_high < GREATEST(delivery_counter.seq_reserved, excluded.delivery_high)
            RETURNING one
            """)
    }

    public func reserveSequence(through seq: Int64) async throws {
        guard StoredRange.sequence.contains(seq) else {
            throw StoreFailure(description: "delivery numbers through \(seq) would pass 2^62", permanent: true)
        }
        _ = try await written(
            "UPDATE delivery_counter SET seq_reserved = \(seq) WHERE seq_reserved < \(seq) RETURNING one")
    }
}
