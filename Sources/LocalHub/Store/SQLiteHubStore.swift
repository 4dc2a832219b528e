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

    public func sequenceHighWater() async throws -> Int64 {
        try await pool.read { db in
            let reserved = try Int64(String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'seq_reserved'") ?? "0") ?? 0
            let written = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM delivery") ?? 0
            return max(reserved, written)
        }
    }

    public func reserveSequence(through seq: Int64) async throws {
        try await pool.write { db in
            // Never lowered: numbers below an earlier reservation may have been handed out.
            let reserved = try Int64(String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'seq_reserved'") ?? "0") ?? 0
            guard seq > reserved else { return }
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('seq_reserved', ?)", arguments: [String(seq)])
        }
    }

    public func epoch() async throws -> String {
        try await pool.read { db in
            try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'epoch'") ?? ""
        }
    }

    /// Loads every installation and registration. A row that cannot be read (cut short,
    /// hand-edited, written by a version with other rules) is moved to the quarantine table
    /// in the same transaction and reported, and loading goes on.
    public func load() async throws -> HubSnapshot {
        try await pool.write { db in
            var snapshot = HubSnapshot()
            var rejected: [(table: String, hub: Data, id: Data, record: QuarantinedRecord)] = []
            func text(_ value: DatabaseValue) -> String? {
                guard case .blob(let data) = value.storage else { return String.fromDatabaseValue(value) }
                return String(validating: data, as: UTF8.self)
            }
            let installations = try Row.fetchCursor(
                db, sql: "SELECT CAST(hub AS BLOB) AS hub, CAST(id AS BLOB) AS id, CAST(json AS BLOB) AS json FROM installation")
            while let row = try installations.next() {
                let hub: Data = row["hub"]
                let id: Data = row["id"]
                do {
                    guard let hubName = String(validating: hub, as: UTF8.self), let json = text(row["json"]) else {
                        throw QuarantineReason(description: "the row is not UTF-8 text")
                    }
                    snapshot.installations.append((hubName, try Installation.stored(json: json, id: id)))
                } catch {
                    rejected.append(
                        (
                            "installation", hub, id,
                            QuarantinedRecord(kind: "installation", storedHub: hub, storedId: id, reason: "\(error)")
                        ))
                }
            }
            let registrations = try Row.fetchCursor(
                db,
                sql:
                    "SELECT CAST(hub AS BLOB) AS hub, CAST(id AS BLOB) AS id, CAST(xml AS BLOB) AS xml, created, updated FROM registration"
            )
            while let row = try registrations.next() {
                let hub: Data = row["hub"]
                let id: Data = row["id"]
                do {
                    guard let hubName = String(validating: hub, as: UTF8.self), let xml = text(row["xml"]),
                        let created = Double.fromDatabaseValue(row["created"]),
                        let updated = Double.fromDatabaseValue(row["updated"])
                    else { throw QuarantineReason(description: "the row is not UTF-8 text with its times") }
                    snapshot.registrations.append(
                        try StoredRegistration.stored(hub: hubName, id: id, xml: xml, created: created, updated: updated))
                } catch {
                    rejected.append(
                        (
                            "registration", hub, id,
                            QuarantinedRecord(kind: "registration", storedHub: hub, storedId: id, reason: "\(error)")
                        ))
                }
            }
            // A row that is not a token is left out: it could only have been written by hand.
            let claims = try Row.fetchCursor(
                db, sql: "SELECT CAST(hub AS BLOB) AS hub, CAST(device AS BLOB) AS device FROM sandbox_device")
            while let row = try claims.next() {
                let hub: Data = row["hub"]
                let device: Data = row["device"]
                guard let hubName = String(validating: hub, as: UTF8.self), let token = String(validating: device, as: UTF8.self),
                    DeviceToken.isValid(token)
                else { continue }
                snapshot.claimedDevices.append((hubName, token.lowercased()))
            }
            let now = Date().timeIntervalSince1970
            for entry in rejected {
                let body = entry.table == "installation" ? "json" : "xml"
                try db.execute(
                    sql: """
                        INSERT INTO quarantine (kind, hub, id, body, reason, at)
                        SELECT ?, CAST(hub AS BLOB), CAST(id AS BLOB), CAST(\(body) AS BLOB), ?, ? FROM \(entry.table)
                        WHERE CAST(hub AS BLOB) = ? AND CAST(id AS BLOB) = ?
                        """,
                    arguments: [entry.table, entry.record.reason, now, entry.hub, entry.id])
                try db.execute(
                    sql: "DELETE FROM \(entry.table) WHERE CAST(hub AS BLOB) = ? AND CAST(id AS BLOB) = ?",
                    arguments: [entry.hub, entry.id])
            }
            snapshot.quarantined = rejected.map(\.record)
            snapshot.quarantinedTotal = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM quarantine") ?? 0
            return snapshot
        }
    }

    @discardableResult
    public func apply(_ mutations: [HubMutation]) async throws -> ClosedRange<Int64>? {
        guard !mutations.isEmpty else { return nil }
        try await pool.write { db in
            for mutation in mutations {
                switch mutation {
                // Statements prepared once per connection (GRDB's cache), not once per change.
                case .upsertInstallation(let hub, let installation):
                    try db.cachedStatement(sql: "INSERT OR REPLACE INTO installation (hub, id, json) VALUES (?, ?, ?)")
                        .execute(arguments: [hub, installation.installationId, installation.json.text])
                case .deleteInstallation(let hub, let id):
                    try db.cachedStatement(sql: "DELETE FROM installation WHERE hub = ? AND id = ?")
                        .execute(arguments: [hub, id])
                case .upsertRegistration(let stored):
                    try db.cachedStatement(
                        sql: "INSERT OR REPLACE INTO registration (hub, id, xml, created, updated) VALUES (?, ?, ?, ?, ?)"
                    ).execute(arguments: [
                        stored.hub, stored.id, stored.registration.descriptionXML, stored.created.timeIntervalSince1970,
                        stored.updated.timeIntervalSince1970,
                    ])
                case .deleteRegistration(let hub, let id):
                    try db.cachedStatement(sql: "DELETE FROM registration WHERE hub = ? AND id = ?")
                        .execute(arguments: [hub, id])
                case .fireScheduled(let hub, let id):
                    try db.cachedStatement(
                        sql: "UPDATE notification SET state = 'Enqueued' WHERE hub = ? AND id = ? AND state = 'Scheduled'"
                    ).execute(arguments: [hub, id])
                case .cancelScheduled(let hub, let id, let at):
                    try db.cachedStatement(
                        sql: "UPDATE notification SET state = ?, ended = ? WHERE hub = ? AND id = ? AND state = 'Scheduled'"
                    ).execute(arguments: [NotificationDetails.State.cancelled.rawValue, at.timeIntervalSince1970, hub, id])
                case .claimDevice(let hub, let device, let at):
                    try db.cachedStatement(
                        sql: """
                            INSERT INTO sandbox_device (hub, device, claimed) VALUES (?, ?, ?)
                            ON CONFLICT (hub, device) DO UPDATE SET claimed = excluded.claimed
                            """
                    ).execute(arguments: [hub, device, at.timeIntervalSince1970])
                case .releaseDevice(let hub, let device):
                    try db.cachedStatement(sql: "DELETE FROM sandbox_device WHERE hub = ? AND device = ?")
                        .execute(arguments: [hub, device])
                case .forgetDevice(let hub, let device):
                    // Its deliveries, then its reference with the gap it kept; the payloads
                    // they shared go with the next retention pass.
                    try db.cachedStatement(
                        sql: "DELETE FROM delivery WHERE device = (SELECT id FROM device_ref WHERE hub = ? AND device = ?)"
                    ).execute(arguments: [hub, device])
                    try db.cachedStatement(sql: "DELETE FROM device_ref WHERE hub = ? AND device = ?")
                        .execute(arguments: [hub, device])
                case .insertNotification(let n):
                    try db.execute(
                        sql: """
                            INSERT INTO notification (hub, id, format, tags, body, headers, direct_handle, test, enqueued, state, started, ended, outcome, fire_at, direct_handles)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                            """,
                        arguments: Self.notificationArguments(n))
                }
            }
        }
        return nil
    }

    static func notificationArguments(_ n: StoredNotification) -> StatementArguments {
        [
            n.hub, n.id, n.format.rawValue, n.tagExpression, n.body, Self.encode(n.headers), n.directHandle, n.isTest,
            n.enqueued.timeIntervalSince1970, n.state.rawValue, n.started?.timeIntervalSince1970, n.ended?.timeIntervalSince1970,
            Self.encode(n.outcomeCounts.mapValues(String.init)), n.scheduledFor?.timeIntervalSince1970,
            n.batchHandles.map { JSONValue.array($0.map(JSONValue.string)).text },
        ]
    }

    static func encode(_ map: [String: String]) -> String {
        JSONValue.object(map.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).text
    }

    /// A send's report as stored: what `SendExplanation` writes of its lines.
    static func encode(_ report: [SendExplanation.Line]) -> String? {
        guard !report.isEmpty else { return nil }
        let partial = SendExplanation(
            notificationId: "", hub: "", format: "", tagExpression: nil, state: "", enqueued: "", scheduledFor: nil, counts: [:],
            matches: [], matchCount: 0, nearMisses: [], renderings: [], lines: report, findings: [])
        return JSONValue.array(partial.json["lines"]?.arrayValue ?? []).text
    }

    static func decodeReport(_ text: String?) -> [SendExplanation.Line] {
        guard let text, let lines = try? JSONValue(parsing: text) else { return [] }
        return
            (try? SendExplanation(
                json: .object([
                    ("notificationId", .string("")), ("hub", .string("")), ("format", .string("")), ("state", .string("")),
                    ("lines", lines),
                ])))?.lines ?? []
    }

    static func decode(_ text: String) -> [String: String] {
        guard let members = (try? JSONValue(parsing: text))?.objectMembers else { return [:] }
        return Dictionary(members.compactMap { key, value in value.stringValue.map { (key, $0) } }, uniquingKeysWith: { $1 })
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

    static func notification(from row: Row) -> StoredNotification {
        var n = StoredNotification(
            hub: row["hub"], id: row["id"], format: NotificationFormat(wireValue: row["format"]) ?? .template,
            tagExpression: row["tags"],
            body: row["body"], headers: decode(row["headers"]), directHandle: row["direct_handle"], isTest: row["test"],
            enqueued: Date(timeIntervalSince1970: row["enqueued"]))
        n.state = NotificationDetails.State(rawValue: row["state"]) ?? .unknown
        n.started = (row["started"] as Double?).map(Date.init(timeIntervalSince1970:))
        n.ended = (row["ended"] as Double?).map(Date.init(timeIntervalSince1970:))
        n.outcomeCounts = decode(row["outcome"]).compactMapValues(Int.init)
        n.scheduledFor = (row["fire_at"] as Double?).map(Date.init(timeIntervalSince1970:))
        n.report = decodeReport(row["report"])
        // A batch whose handles cannot be read reaches no one (never everyone, as a send
        // without handles and tags would).
        n.batchHandles = (row["direct_handles"] as String?).map {
            ((try? JSONValue(parsing: $0))?.arrayValue ?? []).compactMap(\.stringValue)
        }
        return n
    }

    public func unfinishedNotifications() async throws -> [StoredNotification] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM notification WHERE state IN ('Enqueued', 'Processing') ORDER BY seq")
                .map(Self.notification(from:))
        }
    }

    public func scheduledNotifications() async throws -> [StoredNotification] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM notification WHERE state = 'Scheduled' ORDER BY fire_at")
                .map(Self.notification(from:))
        }
    }

    public func notification(hub: String, id: String) async throws -> StoredNotification? {
        try await pool.read { db in
            try Row.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM notification WHERE hub = ? AND id = ?"), arguments: [hub, id]
            )
            .map(Self.notification(from:))
        }
    }

    public func staleClaims(before: Date, limit: Int) async throws -> [(hub: String, device: String)] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT hub, device FROM sandbox_device WHERE claimed < ? ORDER BY claimed LIMIT ?",
                arguments: [before.timeIntervalSince1970, limit]
            ).map { ($0["hub"], $0["device"]) }
        }
    }
}
