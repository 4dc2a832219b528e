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
            let reserved = try Self.counter("seq_reserved", in: db) ?? 0
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
            let reserved = try Self.counter("seq_reserved", in: db) ?? 0
            guard seq > reserved else { return }
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('seq_reserved', ?)", arguments: [String(seq)])
        }
    }

    /// The epoch; one that is missing or unreadable is replaced by a new one (logged): a
    /// receiver then reads the log from its start again and dedupes.
    public func epoch() async throws -> String {
        let kept = try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'epoch'").flatMap { row -> String? in
                try? row.stored("value", as: String.self)
            }
        }
        if let kept, HubEpoch.isValid(kept) { return kept }
        let made = HubEpoch.make()
        try await pool.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('epoch', ?)", arguments: [made])
        }
        SkippedRows.shared.skip(
            "the epoch in meta", QuarantineReason(description: "it is missing or unreadable; a new epoch \(made) begins"))
        return made
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
                let (hub, id) = (Self.bytes(row, "hub"), Self.bytes(row, "id"))
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
                let (hub, id) = (Self.bytes(row, "hub"), Self.bytes(row, "id"))
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
                db,
                sql: "SELECT CAST(hub AS BLOB) AS hub, CAST(device AS BLOB) AS device, secret_hash FROM sandbox_device")
            while let row = try claims.next() {
                guard let hub = try? row.required("hub", as: Data.self), let device = try? row.required("device", as: Data.self),
                    let hubName = String(validating: hub, as: UTF8.self), let token = String(validating: device, as: UTF8.self),
                    DeviceToken.isValid(token)
                else { continue }
                let digest = ClaimDigest.stored((try? row.stored("secret_hash", as: String.self)) ?? nil)
                snapshot.claimedDevices.append((hubName, token.lowercased(), digest))
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

    /// A column read as bytes, whatever kind of value it holds (the query casts it to a BLOB).
    static func bytes(_ row: Row, _ column: String) -> Data {
        (try? row.stored(column, as: Data.self)) ?? Data()
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
                case .beginDispatch(let hub, let id):
                    try db.cachedStatement(sql: "UPDATE notification SET starts = starts + 1 WHERE hub = ? AND id = ?")
                        .execute(arguments: [hub, id])
                case .claimDevice(let hub, let device, let at, let digest):
                    try db.cachedStatement(
                        sql: """
                            INSERT INTO sandbox_device (hub, device, claimed, secret_hash) VALUES (?, ?, ?, ?)
                            ON CONFLICT (hub, device) DO UPDATE SET claimed = excluded.claimed,
                                secret_hash = COALESCE(sandbox_device.secret_hash, excluded.secret_hash)
                            """
                    ).execute(arguments: [hub, device, at.timeIntervalSince1970, digest])
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
                            INSERT INTO notification (hub, id, format, tags, body, headers, direct_handle, test, enqueued, state, started, ended, outcome, fire_at, direct_handles, starts)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                            """,
                        arguments: Self.notificationArguments(n))
                }
            }
        }
        return nil
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
