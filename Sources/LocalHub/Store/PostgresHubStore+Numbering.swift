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

    /// The highest number given: the durable mark, the last delivery written, the last one
    /// retention told a device it lost, and the reservation (each checked: a value that is no
    /// number in range throws, and nothing is numbered past it).
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
            (SELECT COALESCE(MAX(seq), 0) FROM delivery), (SELECT COALESCE(MAX(gap_through), 0) FROM device_gap))
        """

    public func reserveSequence(through seq: Int64) async throws {
        guard StoredRange.sequence.contains(seq) else {
            throw StoreFailure(description: "delivery numbers through \(seq) would pass 2^62", permanent: true)
        }
        _ = try await written(
            "UPDATE meta SET value = \(String(seq)) WHERE key = 'seq_reserved' AND value::bigint < \(seq) RETURNING key")
    }
}
