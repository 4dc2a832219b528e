import Foundation
import GRDB
import NotificationHubs

/// The hub's durable store: SQLite through GRDB, WAL, `synchronous=FULL`, named migrations.
public final class SQLiteHubStore: HubStore {
    let pool: DatabasePool

    /// Opens (creating if needed) the database at `path` and migrates it.
    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        // Again on the writer, after the pool has opened: GRDB's WAL set-up runs after
        // `prepareDatabase` and sets `synchronous = NORMAL`, under which a commit is not
        // synced to disk (only checkpoints are), so an answered write could be lost.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        try Self.migrator.migrate(pool)
    }

    /// The highest number that may have been handed out: the reservation, the last delivery
    /// written, and the last one retention told a device it lost (a log emptied by retention
    /// keeps its reservation, so numbering goes on above it). Out of range, it throws: nothing
    /// may be numbered past it.
    public func sequenceHighWater() async throws -> Int64 {
        try await pool.read { db in
            let reserved = try Self.reservedSequence(in: db) ?? 0
            let written = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM delivery") ?? 0
            let told =
                try Int64.fetchOne(
                    db, sql: "SELECT MAX(gap_through) FROM device_ref WHERE typeof(gap_through) = 'integer'") ?? 0
            let mark = max(reserved, written, told)
            guard StoredRange.sequence.contains(mark) else {
                throw StoreFailure(
                    description: "the delivery log's numbers reach \(mark), past 2^62: no delivery can be numbered after it",
                    permanent: true)
            }
            return mark
        }
    }

    public func reserveSequence(through seq: Int64) async throws {
        guard StoredRange.sequence.contains(seq) else {
            throw StoreFailure(description: "delivery numbers through \(seq) would pass 2^62", permanent: true)
        }
        try await pool.write { db in
            // Never lowered: numbers below an earlier reservation may have been handed out.
            let reserved = try Self.reservedSequence(in: db) ?? 0
            guard seq > reserved else { return }
            try db.execute(
                sql: """
                    INSERT INTO delivery_counter (one, seq_reserved) VALUES (1, ?)
                    ON CONFLICT (one) DO UPDATE SET seq_reserved = excluded.seq_reserved
                    """, arguments: [seq])
        }
    }

    /// The epoch; one that is missing or unreadable is replaced by a new one (logged): a
    /// receiver then reads the log from its start again and dedupes.
    public func epoch() async throws -> String {
        let kept = try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT epoch FROM delivery_counter").flatMap { row -> String? in
                try? row.stored("epoch", as: String.self)
            }
        }
        if let kept, HubEpoch.isValid(kept) { return kept }
        let made = HubEpoch.make()
        try await pool.write { db in
            try Self.setEpoch(made, in: db)
        }
        SkippedRows.shared.skip(
            "the epoch in delivery_counter",
            QuarantineReason(description: "it is missing or unreadable; a new epoch \(made) begins"))
        return made
    }

    static func notificationArguments(_ n: StoredNotification) -> StatementArguments {
        let c = n.columns
        return [
            c.hub, c.id, c.format, c.tags, c.body, c.headers, c.directHandle, c.test, c.enqueued, c.state, c.started, c.ended,
            c.outcome, c.fireAt, c.directHandles, c.starts,
        ]
    }

    /// Committed without waiting for the disk (`synchronous = NORMAL` for this transaction):
    /// WAL keeps it through a crash of the hub, and the next synced commit or checkpoint
    /// syncs it. A record that a power loss takes leaves its notifications enqueued, and
    /// they are dispatched again at restart (receivers dedupe): a send is never lost, and
    /// a send's answer never waits for a second sync.
    public func record(_ dispatches: [DispatchRecord]) async throws -> [Delivery] {
        guard !dispatches.isEmpty else { return [] }
        return try await pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            defer { try? db.execute(sql: "PRAGMA synchronous = FULL") }
            var written: [Delivery] = []
            try db.inTransaction {
                written = try Self.record(dispatches, in: db)
                return .commit
            }
            return written
        }
    }

    public func unfinishedNotifications() async throws -> [StoredNotification] {
        try await notifications("SELECT * FROM notification WHERE state IN ('Enqueued', 'Processing') ORDER BY seq")
    }

    public func scheduledNotifications() async throws -> [StoredNotification] {
        try await notifications("SELECT * FROM notification WHERE state = 'Scheduled' ORDER BY fire_at")
    }

    public func notification(hub: String, id: String) async throws -> StoredNotification? {
        try await notifications("SELECT * FROM notification WHERE hub = ? AND id = ?", arguments: [hub, id]).first
    }

    public func staleClaims(before: Date, limit: Int) async throws -> [(hub: String, device: String)] {
        try await pool.read { db in
            // A claim whose time is not a number (SQLite sorts text after every number) is stale too.
            try Row.fetchAll(
                db,
                sql: """
                    SELECT hub, device FROM sandbox_device
                    WHERE claimed < ? OR typeof(claimed) NOT IN ('integer', 'real') ORDER BY claimed LIMIT ?
                    """,
                arguments: [before.timeIntervalSince1970, limit]
            ).compactMap { row in
                guard let hub: String = try? row.required("hub"), let device: String = try? row.required("device") else {
                    return nil
                }
                return (hub, device)
            }
        }
    }
}
