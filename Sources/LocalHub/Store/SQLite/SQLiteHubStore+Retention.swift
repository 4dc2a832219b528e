import Foundation
import GRDB

/// Retention on SQLite. Deliveries are numbered in the order they are recorded, and every
/// payload knows the last number of its deliveries (`last_seq`), so what is older than a
/// horizon is one range of numbers: removed with one range delete, after each device's share
/// of it is noted as its gap. Over the cap, the largest holders give first
/// (`evictLargestHolders`).
extension SQLiteHubStore {
    public func prune(before horizon: Date, maximumLogBytes: Int64) async throws -> PruneReport {
        var report = PruneReport()
        // What is older than the horizon, then what is over the cap: each in steps of at most
        // `pruneStep` deliveries, one transaction each, so the hub's writes wait for one
        // step, never for the whole of a large prune.
        let byAge = try await pool.read { db in
            try Int64.fetchOne(
                db, sql: "SELECT MAX(id) FROM payload WHERE delivered < ?", arguments: [horizon.timeIntervalSince1970])
        }
        if let through = byAge { report.merge(try await removeLog(upTo: through)) }
        report.merge(try await evictLargestHolders(maximum: maximumLogBytes))
        // What the holders' passes left over the cap (payloads many devices share free little
        // each): the oldest, as before.
        let overCap = try await pool.read { db in try Self.overCap(maximumLogBytes, in: db) }
        if let (through, _) = overCap { report.merge(try await removeLog(upTo: through)) }
        report.notifications = try await pool.write { db in
            try db.execute(
                sql: """
                    DELETE FROM notification WHERE ended IS NOT NULL AND ended < ?
                        AND state NOT IN ('Enqueued', 'Processing', 'Scheduled')
                    """, arguments: [horizon.timeIntervalSince1970])
            return db.changesCount
        }
        return report
    }

    /// Deliveries removed at most in one transaction of a prune (a payload's deliveries go
    /// together, so one send to more devices is one step of its own).
    static let pruneStep: Int64 = 50_000

    /// The payloads numbered up to `through` and their deliveries removed, in steps.
    private func removeLog(upTo through: Int64) async throws -> PruneReport {
        var report = PruneReport()
        while true {
            let step = try await pool.write { db -> (PruneReport, Bool)? in
                guard let first = try Int64.fetchOne(db, sql: "SELECT MIN(seq) FROM delivery") else { return nil }
                // The last payload of this step: the first whose deliveries reach a step past
                // the oldest, or `through`. (Numbers are read as data: held to their range.)
                let cut =
                    try Int64.fetchOne(
                        db, sql: "SELECT MIN(id) FROM payload WHERE id <= ? AND last_seq >= ?",
                        arguments: [through, StoredRange.clamped(first) + Self.pruneStep]) ?? through
                guard let seq = try Int64.fetchOne(db, sql: "SELECT MAX(last_seq) FROM payload WHERE id <= ?", arguments: [cut])
                else { return nil }
                return (try Self.removeLog(through: cut, seq: seq, in: db), cut >= through)
            }
            guard let (removed, done) = step else { break }
            report.merge(removed)
            if done || removed.deliveries + removed.payloads == 0 { break }
        }
        return report
    }

    /// The payloads and deliveries through `id` and `seq` removed, each device's share noted.
    private static func removeLog(through id: Int64, seq: Int64, in db: Database) throws -> PruneReport {
        var report = PruneReport()
        try db.execute(
            sql: """
                UPDATE device_ref SET gap_from = COALESCE(gap_from, g.first), gap_through = MAX(COALESCE(gap_through, 0), g.last),
                    gap_count = gap_count + g.n
                FROM (SELECT device, MIN(seq) AS first, MAX(seq) AS last, COUNT(*) AS n FROM delivery WHERE seq <= ?
                    GROUP BY device) AS g
                WHERE device_ref.id = g.device
                """, arguments: [seq])
        report.devices = db.changesCount
        try db.execute(sql: "DELETE FROM delivery WHERE seq <= ?", arguments: [seq])
        report.deliveries = db.changesCount
        try db.execute(sql: "DELETE FROM payload WHERE id <= ?", arguments: [id])
        report.payloads = db.changesCount
        return report
    }

    /// Where the log must be cut for what is kept to fit `maximum` bytes: the last payload
    /// to remove and its last number; nil when it fits. Each payload's share is its body and
    /// its deliveries (the numbers since the payload before).
    private static func overCap(_ maximum: Int64, in db: Database) throws -> (Int64, Int64)? {
        var excess = try Self.excess(over: maximum, in: db)
        guard excess > 0 else { return nil }
        // A `last_seq` that is no number (written by hand) counts as the payload before's.
        let payloads = try Row.fetchCursor(
            db,
            sql: """
                SELECT id, length(body) AS size, CASE WHEN typeof(last_seq) = 'integer' THEN last_seq ELSE 0 END AS last_seq
                FROM payload ORDER BY id
                """)
        // Numbers read as data, held to their range, so that nothing here overflows.
        var previous = StoredRange.clamped(try Int64.fetchOne(db, sql: "SELECT MIN(seq) FROM delivery") ?? 1) - 1
        var cut: (Int64, Int64)?
        while excess > 0, let row = try payloads.next() {
            let last = StoredRange.clamped(row["last_seq"])
            let size: Int64 = row["size"]
            let (rows, overflow) = max(0, last - previous).multipliedReportingOverflow(by: deliveryRowBytes)
            excess -= overflow ? excess : size + rows
            previous = max(previous, last)
            cut = (row["id"], max(cut?.1 ?? 0, last))
        }
        return cut
    }

    /// What the log takes beyond `maximum` bytes (0 or less: it fits): its payloads, and
    /// `deliveryRowBytes` a delivery.
    static func excess(over maximum: Int64, in db: Database) throws -> Int64 {
        let total = try Row.fetchOne(
            db,
            sql: "SELECT COALESCE(SUM(length(body)), 0) AS bytes, (SELECT COUNT(*) FROM delivery) AS n FROM payload")
        let bytes: Int64 = total?["bytes"] ?? 0
        let deliveries: Int64 = total?["n"] ?? 0
        let (rows, overflow) = deliveries.multipliedReportingOverflow(by: deliveryRowBytes)
        return overflow ? Int64.max : bytes + rows - maximum
    }

    public func gap(hub: String, device: String) async throws -> DeliveryGap? {
        try await pool.read { db in
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(
                        sql: "SELECT gap_from, gap_through, gap_count FROM device_ref WHERE hub = ? AND device = ?"),
                    arguments: [hub, device]),
                let from: Int64 = try? row.required("gap_from"), let through: Int64 = try? row.required("gap_through"),
                let count: Int64 = try? row.required("gap_count"), StoredRange.sequence.contains(from),
                StoredRange.sequence.contains(through), StoredRange.count.contains(count)
            else { return nil }
            return DeliveryGap(from: from, through: through, count: Int(count))
        }
    }

    public func usage() async throws -> StoreUsage {
        let path = pool.path
        return try await pool.read { db in
            let pages: Int64 = try Int64.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            let free: Int64 = try Int64.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
            let size: Int64 = try Int64.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
            let log = try Row.fetchOne(
                db,
                sql: """
                    SELECT COALESCE(SUM(length(body)), 0) AS bytes, MIN(delivered) AS oldest,
                        (SELECT COUNT(*) FROM delivery) AS n, (SELECT COUNT(*) FROM notification) AS notifications
                    FROM payload
                    """)
            let deliveries: Int64 = log?["n"] ?? 0
            var fileBytes: Int64 = 0
            for suffix in ["", "-wal"] {
                let attributes = try? FileManager.default.attributesOfItem(atPath: path + suffix)
                fileBytes += (attributes?[.size] as? NSNumber)?.int64Value ?? 0
            }
            return StoreUsage(
                usedBytes: (pages - free) * size, fileBytes: fileBytes,
                deliveryLogBytes: (log?["bytes"] ?? 0) + deliveries * deliveryRowBytes, deliveries: deliveries,
                oldestDelivery: (log.flatMap { try? $0.stored("oldest", as: Double.self) }).map(
                    Date.init(timeIntervalSince1970:)),
                notifications: log?["notifications"] ?? 0)
        }
    }

    /// Free pages back to the file system: incremental on a database made with it, else a
    /// whole `VACUUM` that also turns incremental vacuum on, so later ones are cheap.
    public func compact() async throws {
        try await pool.writeWithoutTransaction { db in
            let mode = try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? 0
            if mode == 2 {
                try db.execute(sql: "PRAGMA incremental_vacuum")
            } else {
                try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
                try db.execute(sql: "VACUUM")
            }
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }
}

extension PruneReport {
    mutating func merge(_ other: PruneReport) {
        deliveries += other.deliveries
        payloads += other.payloads
        devices += other.devices
    }
}
