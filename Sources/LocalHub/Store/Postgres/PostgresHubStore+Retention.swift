import Foundation
import PostgresNIO

/// Retention on PostgreSQL: deliveries are numbered in commit order, so what is older than a
/// horizon is one range of numbers, removed after each device's share is noted as its gap.
/// Over the cap, the largest holders give first (`evictLargestHolders`).
extension PostgresHubStore {
    public func prune(before horizon: Date, maximumLogBytes: Int64) async throws -> PruneReport {
        try await transaction { connection in
            var report = PruneReport()
            // One remover of the log's rows at a time: retention, or the copy of its earlier form.
            try await connection.query("SELECT pg_advisory_xact_lock(\(Lock.logRemoval.rawValue))", logger: self.logger)
            // By age: the numbers before the first delivery as young as the horizon (the first
            // number of the first payload that young; a delivery shares its payload's time), as
            // the memory store cuts. A delivery numbered after it keeps its place even when a
            // node's clock dated it older.
            let cutoff = horizon.timeIntervalSince1970
            let byAge = try await connection.query(
                """
                WITH young AS (
                    SELECT COALESCE(LEAST(
                        (SELECT MIN(first_seq) FROM payload WHERE delivered >= \(cutoff)),
                        (SELECT seq FROM delivery_v1 WHERE delivered >= \(cutoff) ORDER BY seq LIMIT 1)), \(Int64.max)) AS seq)
                SELECT GREATEST(
                    (SELECT MAX(d.seq) FROM delivery d WHERE d.seq < (SELECT seq FROM young)),
                    (SELECT MAX(o.seq) FROM delivery_v1 o WHERE o.seq < (SELECT seq FROM young)))
                """, logger: self.logger
            ).collect().first?.decode(Int64?.self)
            if let seq = byAge { report.merge(try await self.removeLog(through: seq, on: connection)) }
            report.merge(try await self.evictLargestHolders(maximum: maximumLogBytes, on: connection))
            // Still over the cap (payloads many devices share free little each): the newest
            // deliveries that fit are kept, by the average size (each payload counted once, as
            // on SQLite).
            let totals = try await self.logTotals(on: connection)
            if let (bytes, count) = totals, count > 0, bytes + count * deliveryRowBytes > maximumLogBytes {
                let each = max(1, (bytes + count * deliveryRowBytes) / count)
                let kept = max(0, maximumLogBytes / each)
                let cut = try await connection.query(
                    """
                    SELECT seq FROM (SELECT seq FROM delivery UNION ALL SELECT seq FROM delivery_v1) u
                    ORDER BY seq DESC OFFSET \(kept) LIMIT 1
                    """, logger: self.logger
                ).collect().first?.decode(Int64.self)
                if let cut { report.merge(try await self.removeLog(through: cut, on: connection)) }
            }
            let removed = try await connection.query(
                """
                DELETE FROM notification WHERE ended IS NOT NULL AND ended < \(cutoff)
                    AND state NOT IN ('Enqueued', 'Processing', 'Scheduled')
                RETURNING seq
                """, logger: self.logger
            ).collect()
            report.notifications = removed.count
            if report.deliveries > 0 { try await self.dropUnusedDeviceReferences(on: connection) }
            return report
        }
    }

    /// The log's payload bytes and its deliveries, both forms together.
    func logTotals(on connection: PostgresConnection) async throws -> (bytes: Int64, count: Int64)? {
        try await connection.query(
            """
            SELECT (SELECT COALESCE(SUM(length(body)), 0) FROM payload)
                    + (SELECT COALESCE(SUM(length(payload)), 0) FROM delivery_v1),
                (SELECT COUNT(*) FROM delivery) + (SELECT COUNT(*) FROM delivery_v1)
            """, logger: logger
        ).collect().first?.decode((Int64, Int64).self)
    }

    /// Devices left with no delivery lose their reference, under the deliveries lock: a
    /// dispatch makes the references it needs and uses them within that lock.
    private func dropUnusedDeviceReferences(on connection: PostgresConnection) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(\(Lock.deliveries.rawValue))", logger: logger)
        try await connection.query(
            "DELETE FROM device_ref r WHERE NOT EXISTS (SELECT 1 FROM delivery d WHERE d.device = r.id)", logger: logger)
    }

    private func removeLog(through seq: Int64, on connection: PostgresConnection) async throws -> PruneReport {
        var report = PruneReport()
        let devices = try await connection.query(
            """
            INSERT INTO device_gap (hub, device, gap_from, gap_through, gap_count)
            SELECT hub, device, MIN(lo), MAX(hi), SUM(n)::bigint FROM (
                SELECT r.hub, r.device, MIN(d.seq) AS lo, MAX(d.seq) AS hi, COUNT(*) AS n
                FROM delivery d JOIN device_ref r ON r.id = d.device WHERE d.seq <= \(seq) GROUP BY r.hub, r.device
                UNION ALL
                SELECT hub, device, MIN(seq), MAX(seq), COUNT(*) FROM delivery_v1 WHERE seq <= \(seq) GROUP BY hub, device) u
            GROUP BY hub, device
            ON CONFLICT (hub, device) DO UPDATE SET gap_through = GREATEST(device_gap.gap_through, excluded.gap_through),
                gap_count = device_gap.gap_count + excluded.gap_count
            RETURNING device
            """, logger: self.logger
        ).collect()
        report.devices = devices.count
        let deleted = try await connection.query(
            """
            WITH gone AS (DELETE FROM delivery WHERE seq <= \(seq) RETURNING seq),
            earlier AS (DELETE FROM delivery_v1 WHERE seq <= \(seq) RETURNING notification_id, template),
            bodies AS (DELETE FROM payload WHERE last_seq <= \(seq) RETURNING id)
            SELECT (SELECT COUNT(*) FROM gone) + (SELECT COUNT(*) FROM earlier),
                (SELECT COUNT(*) FROM bodies) + (SELECT COUNT(DISTINCT (notification_id, template)) FROM earlier)
            """, logger: self.logger
        ).collect().first?.decode((Int64, Int64).self)
        report.deliveries = Int(deleted?.0 ?? 0)
        report.payloads = Int(deleted?.1 ?? 0)
        return report
    }

    public func gap(hub: String, device: String) async throws -> DeliveryGap? {
        try await rows(
            "SELECT gap_from, gap_through, gap_count FROM device_gap WHERE hub = \(hub) AND device = \(device)"
        ).first.map {
            DeliveryGap(
                from: try $0["gap_from"].decode(Int64.self), through: try $0["gap_through"].decode(Int64.self),
                count: Int(try $0["gap_count"].decode(Int64.self)))
        }
    }

    public func usage() async throws -> StoreUsage {
        let row = try await rows(
            """
            SELECT pg_database_size(current_database()) AS size,
                (SELECT COALESCE(SUM(length(body)), 0) FROM payload)
                    + (SELECT COALESCE(SUM(length(payload)), 0) FROM delivery_v1) AS bytes,
                (SELECT COUNT(*) FROM delivery) + (SELECT COUNT(*) FROM delivery_v1) AS n,
                LEAST((SELECT MIN(delivered) FROM payload), (SELECT MIN(delivered) FROM delivery_v1)) AS oldest,
                (SELECT COUNT(*) FROM notification) AS notifications
            """
        ).first
        let size = try row?["size"].decode(Int64.self) ?? 0
        let deliveries = try row?["n"].decode(Int64.self) ?? 0
        return StoreUsage(
            usedBytes: size, fileBytes: size,
            deliveryLogBytes: (try row?["bytes"].decode(Int64.self) ?? 0) + deliveries * deliveryRowBytes,
            deliveries: deliveries,
            oldestDelivery: try row?["oldest"].decode(Double?.self).map(Date.init(timeIntervalSince1970:)),
            notifications: try row?["notifications"].decode(Int64.self) ?? 0)
    }

    /// `VACUUM` on the log's tables: PostgreSQL reuses the space (giving it to the file system
    /// needs `VACUUM FULL`, which locks the tables; an operator's choice).
    public func compact() async throws {
        for table in ["delivery", "payload", "device_ref", "delivery_v1", "notification", "change"] {
            _ = try await rows(PostgresQuery(unsafeSQL: "VACUUM \(table)"))
        }
    }
}
