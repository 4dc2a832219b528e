import Foundation
import GRDB
import NotificationHubs

/// What a backup and a move between stores read of a SQLite hub database besides `load`, and
/// what they write into a new one besides `apply` and `record`: every notification, the
/// delivery log with its numbers, the gaps retention kept, the claims' times, the epoch.
extension SQLiteHubStore {
    /// Closes the database: the last connection's close checkpoints the WAL into the file.
    func close() throws {
        try pool.close()
    }

    /// Notifications numbered after `seq` (their row order), oldest first, each checked as a
    /// node checks a row it reads; one that fails is counted in `skipped`, not returned.
    func notificationPage(after seq: Int64, limit: Int) async throws -> (
        notifications: [StoredNotification], through: Int64?, skipped: Int
    ) {
        try await pool.read { db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT * FROM notification WHERE seq > ? ORDER BY seq LIMIT ?", arguments: [seq, limit])
            var notifications: [StoredNotification] = []
            var skipped = 0
            for row in rows {
                if let checked = try? Self.notification(from: row).checkedStored() {
                    notifications.append(checked)
                } else {
                    skipped += 1
                }
            }
            return (notifications, rows.last.flatMap { try? $0.stored("seq", as: Int64.self) }, skipped)
        }
    }

    /// The delivery log after `seq`, every device's, in number order; rows that fail their
    /// checks are counted in `skipped`.
    func deliveryPage(after seq: Int64, limit: Int) async throws -> (deliveries: [Delivery], through: Int64?, skipped: Int) {
        try await pool.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT d.seq, r.device AS device_name, p.hub, p.notification_id, p.template, p.body, p.delivered, p.tags
                    FROM delivery d JOIN payload p ON p.id = d.payload JOIN device_ref r ON r.id = d.device
                    WHERE d.seq > ? ORDER BY d.seq LIMIT ?
                    """, arguments: [seq, limit])
            var deliveries: [Delivery] = []
            for row in rows {
                let device = (try? row.decode(String?.self, forColumn: "device_name")) ?? nil
                if let device, let delivery = Self.checkedDelivery(row, device: device) { deliveries.append(delivery) }
            }
            let through = rows.last.flatMap { (try? $0.decode(Int64?.self, forColumn: "seq")) ?? nil }
            return (deliveries, through, rows.count - deliveries.count)
        }
    }

    /// The gaps retention kept, by hub and device.
    func gaps() async throws -> [(hub: String, device: String, gap: DeliveryGap)] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT hub, device, gap_from, gap_through, gap_count FROM device_ref
                    WHERE gap_from IS NOT NULL AND gap_through IS NOT NULL
                    """
            ).compactMap { row in
                guard let hub: String = try? row.required("hub"), let device: String = try? row.required("device"),
                    DeviceToken.isValid(device), let from: Int64 = try? row.required("gap_from"),
                    let through: Int64 = try? row.required("gap_through"), let count: Int64 = try? row.required("gap_count"),
                    StoredRange.sequence.contains(from), StoredRange.sequence.contains(through), StoredRange.count.contains(count)
                else { return nil }
                return (hub, device, DeliveryGap(from: from, through: through, count: Int(count)))
            }
        }
    }

    /// When each claim was last claimed or renewed, by hub and device.
    func claimTimes() async throws -> [String: Date] {
        try await pool.read { db in
            var times: [String: Date] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT hub, device, claimed FROM sandbox_device") {
                guard let hub: String = try? row.required("hub"), let device: String = try? row.required("device"),
                    let claimed: Double = try? row.required("claimed"), StoredRange.time.contains(claimed)
                else { continue }
                times[Self.claimKey(hub: hub, device: device.lowercased())] = Date(timeIntervalSince1970: claimed)
            }
            return times
        }
    }

    static func claimKey(hub: String, device: String) -> String { hub + "\u{0}" + device }

    /// Writes deliveries with the numbers they carry, through the delivery log's own writer.
    func importDeliveries(_ deliveries: [Delivery]) async throws {
        guard !deliveries.isEmpty else { return }
        try await pool.write { db in
            var writer = DeliveryLogWriter(db)
            var start = deliveries.startIndex
            // One notification's deliveries at a time: its payloads are shared within it.
            while start < deliveries.endIndex {
                var end = start + 1
                while end < deliveries.endIndex, deliveries[end].notificationId == deliveries[start].notificationId { end += 1 }
                _ = try writer.write(Array(deliveries[start..<end]))
                start = end
            }
        }
    }

    /// Keeps what retention took from each device.
    func importGaps(_ gaps: [(hub: String, device: String, gap: DeliveryGap)]) async throws {
        guard !gaps.isEmpty else { return }
        try await pool.write { db in
            for entry in gaps {
                try db.execute(
                    sql: """
                        INSERT INTO device_ref (hub, device, gap_from, gap_through, gap_count) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (hub, device) DO UPDATE SET gap_from = excluded.gap_from,
                            gap_through = excluded.gap_through, gap_count = excluded.gap_count
                        """,
                    arguments: [entry.hub, entry.device, entry.gap.from, entry.gap.through, entry.gap.count])
            }
        }
    }

    /// Sets the delivery log's epoch.
    func setEpoch(_ epoch: String) async throws {
        try await pool.write { db in
            try Self.setEpoch(epoch, in: db)
        }
    }

    /// Keeps `epoch` as the delivery log's, making the counters' row when it is gone.
    static func setEpoch(_ epoch: String, in db: Database) throws {
        try db.execute(
            sql: "INSERT INTO delivery_counter (one, epoch) VALUES (1, ?) ON CONFLICT (one) DO UPDATE SET epoch = excluded.epoch",
            arguments: [epoch])
    }
}
