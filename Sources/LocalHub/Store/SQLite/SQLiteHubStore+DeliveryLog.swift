import Foundation
import GRDB
import NotificationHubs

/// The delivery log on SQLite: a payload once per notification, template and body
/// (`payload`), each device once (`device_ref`), each delivery its number, its device and
/// its payload (`delivery`): about 25 bytes a delivery besides the payload it shares.
extension SQLiteHubStore {
    static func record(_ dispatches: [DispatchRecord], in db: Database) throws -> [Delivery] {
        var written: [Delivery] = []
        var log = DeliveryLogWriter(db)
        let finish = try db.cachedStatement(
            sql: "UPDATE notification SET state = ?, started = ?, ended = ?, outcome = ?, report = ? WHERE id = ?")
        for dispatch in dispatches {
            written += try log.write(dispatch.deliveries)
            let n = dispatch.notification
            try finish.execute(
                arguments: [
                    n.state.rawValue, n.started?.timeIntervalSince1970, n.ended?.timeIntervalSince1970,
                    StoredCodec.encode(n.outcomeCounts.mapValues(String.init)), StoredCodec.encode(n.report), n.id,
                ])
        }
        return written
    }

    public func deliveries(hub: String, device: String, after seq: Int64, limit: Int) async throws -> [Delivery] {
        try await pool.read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT d.seq, p.hub, p.notification_id, p.template, p.body, p.delivered, p.tags
                        FROM delivery d JOIN payload p ON p.id = d.payload
                        WHERE d.device = (SELECT id FROM device_ref WHERE hub = ? AND device = ?) AND d.seq > ?
                        ORDER BY d.seq LIMIT ?
                        """),
                arguments: [hub, device, seq, limit]
            ).compactMap { row in
                Self.checkedDelivery(row, device: device)
            }
        }
    }

    /// A row of the log as a delivery, or nil (logged) when it is not one the hub wrote.
    static func checkedDelivery(_ row: Row, device: String) -> Delivery? {
        // Decoded so that a value of another type is an error, not a crash (GRDB's subscript
        // stops the process on one).
        func value<T: DatabaseValueConvertible>(_ column: String) -> T? { (try? row.decode(T?.self, forColumn: column)) ?? nil }
        let seq: Int64? = value("seq")
        do {
            return try Delivery.stored(
                seq: seq, hub: value("hub"), device: device, notificationId: value("notification_id"),
                template: value("template"), payload: value("body"), delivered: value("delivered"), tags: value("tags"))
        } catch {
            SkippedRows.shared.skip("delivery \(seq.map(String.init) ?? "?")", error)
            return nil
        }
    }

    public func deleteDeliveries(hub: String, device: String) async throws -> Int {
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM delivery WHERE device = (SELECT id FROM device_ref WHERE hub = ? AND device = ?)",
                arguments: [hub, device])
            return db.changesCount
        }
    }

    public func devices(hub: String) async throws -> [(device: String, count: Int)] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT r.device, COUNT(*) AS n FROM delivery d JOIN device_ref r ON r.id = d.device
                    WHERE r.hub = ? GROUP BY r.device ORDER BY r.device
                    """, arguments: [hub]
            ).compactMap { row in
                guard let device: String = try? row.required("device"), let count: Int = try? row.required("n") else {
                    return nil
                }
                return (device, count)
            }
        }
    }
}

/// Writes deliveries in the compact form: each distinct payload of a notification once, each
/// device's reference looked up once per batch.
struct DeliveryLogWriter {
    private let db: Database
    private var devices: [String: Int64] = [:]
    private var payloads: [PayloadKey: (id: Int64, lastSeq: Int64)] = [:]

    struct PayloadKey: Hashable {
        let notificationId: String
        let template: String
        let body: String
    }

    init(_ db: Database) { self.db = db }

    /// Writes one dispatch's deliveries; returns those written (a number already in the log
    /// is skipped).
    mutating func write(_ deliveries: [Delivery]) throws -> [Delivery] {
        guard !deliveries.isEmpty else { return [] }
        payloads.removeAll(keepingCapacity: true)
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO delivery (seq, device, payload) VALUES (?, ?, ?)")
        // (OR IGNORE: a number already in the log; every other column is given.)
        var written: [Delivery] = []
        written.reserveCapacity(deliveries.count)
        for delivery in deliveries {
            let payload = try payloadId(delivery)
            try insert.execute(arguments: [delivery.seq, try deviceId(hub: delivery.hub, device: delivery.device), payload])
            if db.changesCount > 0 { written.append(delivery) }
        }
        let last = try db.cachedStatement(sql: "UPDATE payload SET last_seq = ? WHERE id = ?")
        for (id, lastSeq) in payloads.values { try last.execute(arguments: [lastSeq, id]) }
        return written
    }

    private mutating func payloadId(_ delivery: Delivery) throws -> Int64 {
        let key = PayloadKey(notificationId: delivery.notificationId, template: delivery.template, body: delivery.payload)
        if let known = payloads[key] {
            payloads[key] = (known.id, max(known.lastSeq, delivery.seq))
            return known.id
        }
        try db.cachedStatement(
            sql:
                "INSERT INTO payload (hub, notification_id, template, tags, delivered, body, last_seq) VALUES (?, ?, ?, ?, ?, ?, ?)"
        ).execute(arguments: [
            delivery.hub, delivery.notificationId, delivery.template, delivery.tags, delivery.delivered.timeIntervalSince1970,
            delivery.payload, delivery.seq,
        ])
        let id = db.lastInsertedRowID
        payloads[key] = (id, delivery.seq)
        return id
    }

    mutating func deviceId(hub: String, device: String) throws -> Int64 {
        let key = hub + "\u{0}" + device
        if let known = devices[key] { return known }
        let id: Int64
        if let existing = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM device_ref WHERE hub = ? AND device = ?"), arguments: [hub, device])
        {
            id = existing
        } else {
            try db.cachedStatement(sql: "INSERT INTO device_ref (hub, device) VALUES (?, ?)").execute(arguments: [hub, device])
            id = db.lastInsertedRowID
        }
        devices[key] = id
        return id
    }
}

/// Copies a delivery log of the old form (a whole payload per delivery) into the compact
/// one, in number order, reading it once: what migration v9 does on an existing hub.
enum DeliveryLogCopy {
    static func copy(from table: String, in db: Database) throws {
        var writer = DeliveryLogWriter(db)
        let rows = try Row.fetchCursor(db, sql: "SELECT * FROM \(table) ORDER BY seq")
        var batch: [Delivery] = []
        var notification = ""
        while let row = try rows.next() {
            // A row that does not read as the hub wrote it is left behind (and logged).
            let delivery: Delivery
            do {
                delivery = try Delivery.stored(
                    seq: try row.stored("seq"), hub: try row.stored("hub"), device: try row.required("device"),
                    notificationId: try row.stored("notification_id"), template: try row.stored("template"),
                    payload: try row.stored("payload"), delivered: try row.stored("delivered"), tags: try row.stored("tags"))
            } catch {
                SkippedRows.shared.skip("delivery row of \(table)", error)
                continue
            }
            // One notification's deliveries at a time: its payloads are shared within it.
            if delivery.notificationId != notification, !batch.isEmpty {
                _ = try writer.write(batch)
                batch.removeAll(keepingCapacity: true)
            }
            notification = delivery.notificationId
            batch.append(delivery)
        }
        _ = try writer.write(batch)
    }
}
