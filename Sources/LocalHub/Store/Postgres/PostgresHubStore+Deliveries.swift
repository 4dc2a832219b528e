import Foundation
import Logging
import NotificationHubs
import PostgresNIO

extension PostgresHubStore {
    /// A row of the log as a delivery, or nil (logged once) when it is not one a node wrote.
    func delivery(from row: PostgresRandomAccessRow) -> Delivery? {
        let seq = try? row["seq"].decode(Int64?.self)
        do {
            guard let device = try? row["device"].decode(String.self) else {
                throw QuarantineReason(description: "it has no device")
            }
            return try Delivery.stored(
                seq: seq, hub: try? row["hub"].decode(String?.self), device: device,
                notificationId: try? row["notification_id"].decode(String?.self),
                template: try? row["template"].decode(String?.self), payload: try? row["payload"].decode(String?.self),
                delivered: try? row["delivered"].decode(Double?.self), tags: try? row["tags"].decode(String?.self))
        } catch let reason as QuarantineReason {
            SkippedRows.shared.skip("delivery \(seq.map(String.init) ?? "?")", reason, logger: logger)
            return nil
        } catch {
            return nil
        }
    }

    public func deliveries(hub: String, device: String, after seq: Int64, limit: Int) async throws -> [Delivery] {
        try await rows(
            """
            SELECT * FROM (
                (SELECT \(unescaped: Self.logColumns) FROM \(unescaped: Self.logJoin)
                WHERE d.device = (SELECT id FROM device_ref WHERE hub = \(hub) AND device = \(device)) AND d.seq > \(seq)
                ORDER BY d.seq LIMIT \(limit))
                UNION ALL
                (SELECT \(unescaped: Self.earlierColumns) FROM delivery_v1 o
                WHERE o.hub = \(hub) AND o.device = \(device) AND o.seq > \(seq) ORDER BY o.seq LIMIT \(limit))) u
            ORDER BY seq LIMIT \(limit)
            """
        ).compactMap(delivery(from:))
    }

    /// One prepared statement: a burst of streams opening (terminals coming back after a
    /// node restarts) read their gaps and backlogs in half the round trips, unplanned.
    public func backlog(hub: String, device: String, after since: Int64, limit: Int) async throws -> DeviceBacklog {
        let found = try await rows(DeviceBacklogPage(hub: hub, device: device, after: since, limit: Int64(limit)))
        var backlog = DeviceBacklog(gap: nil, deliveries: [])
        if let row = found.first, let from = try row["gap_from"].decode(Int64?.self),
            let through = try row["gap_through"].decode(Int64?.self), let count = try row["gap_count"].decode(Int64?.self)
        {
            backlog.gap = DeliveryGap(from: from, through: through, count: Int(count))
        }
        for row in found where try row["seq"].decode(Int64?.self) != nil {
            if let delivery = delivery(from: row) { backlog.deliveries.append(delivery) }
        }
        return backlog
    }

    public func deleteDeliveries(hub: String, device: String) async throws -> Int {
        try await written(
            """
            WITH compact AS (
                DELETE FROM delivery WHERE device = (SELECT id FROM device_ref WHERE hub = \(hub) AND device = \(device))
                RETURNING seq),
            earlier AS (DELETE FROM delivery_v1 WHERE hub = \(hub) AND device = \(device) RETURNING seq)
            SELECT seq FROM compact UNION ALL SELECT seq FROM earlier
            """
        ).count
    }

    public func staleClaims(before: Date, limit: Int) async throws -> [(hub: String, device: String)] {
        try await rows(
            """
            SELECT hub, device FROM sandbox_device WHERE claimed < \(before.timeIntervalSince1970)
            ORDER BY claimed LIMIT \(limit)
            """
        ).map { (try $0["hub"].decode(String.self), try $0["device"].decode(String.self)) }
    }

    public func devices(hub: String) async throws -> [(device: String, count: Int)] {
        try await rows(
            """
            SELECT device, SUM(n)::bigint AS n FROM (
                SELECT r.device, COUNT(*) AS n FROM delivery d JOIN device_ref r ON r.id = d.device
                WHERE r.hub = \(hub) GROUP BY r.device
                UNION ALL SELECT device, COUNT(*) FROM delivery_v1 WHERE hub = \(hub) GROUP BY device) u
            GROUP BY device ORDER BY device
            """
        ).map {
            (try $0["device"].decode(String.self), Int(try $0["n"].decode(Int64.self)))
        }
    }
}

/// A device's gap and its deliveries after both the resume point and the gap
/// (`backlog(hub:device:after:limit:)`), prepared once per connection: one row with no
/// delivery when it has none.
struct DeviceBacklogPage: PostgresPreparedStatement {
    static let sql = """
        SELECT g.gap_from, g.gap_through, g.gap_count, x.*
        FROM (SELECT 1) AS one
        LEFT JOIN device_gap g ON g.hub = $1 AND g.device = $2
        LEFT JOIN LATERAL (
            SELECT * FROM (
                (SELECT \(PostgresHubStore.logColumns) FROM \(PostgresHubStore.logJoin)
                WHERE d.device = (SELECT id FROM device_ref WHERE hub = $1 AND device = $2)
                    AND d.seq > GREATEST($3, g.gap_through)
                ORDER BY d.seq LIMIT $4)
                UNION ALL
                (SELECT \(PostgresHubStore.earlierColumns) FROM delivery_v1 o
                WHERE o.hub = $1 AND o.device = $2 AND o.seq > GREATEST($3, g.gap_through) ORDER BY o.seq LIMIT $4)) u
            ORDER BY u.seq LIMIT $4) x ON true
        ORDER BY x.seq
        """

    let hub: String
    let device: String
    let after: Int64
    let limit: Int64

    func makeBindings() throws -> PostgresBindings { PostgresHubStore.binds(hub, device, after, limit) }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRandomAccessRow { row.makeRandomAccess() }
}
