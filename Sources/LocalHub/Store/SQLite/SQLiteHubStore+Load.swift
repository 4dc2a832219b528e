import Foundation
import GRDB
import NotificationHubs

extension SQLiteHubStore {
    /// A record that failed to decode at load, to be moved to the quarantine.
    typealias Rejected = (table: String, hub: Data, id: Data, record: QuarantinedRecord)

    /// Loads every installation and registration. A row that cannot be read (cut short,
    /// hand-edited, written by a version with other rules) is moved to the quarantine table
    /// in the same transaction and reported, and loading goes on.
    public func load() async throws -> HubSnapshot {
        try await pool.write { db in
            var snapshot = HubSnapshot()
            var rejected: [Rejected] = []
            snapshot.installations = try Self.loadInstallations(rejecting: &rejected, in: db)
            snapshot.registrations = try Self.loadRegistrations(rejecting: &rejected, in: db)
            snapshot.claimedDevices = try Self.loadClaimedDevices(in: db)
            try Self.quarantine(rejected, in: db)
            snapshot.quarantined = rejected.map(\.record)
            snapshot.quarantinedTotal = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM quarantine") ?? 0
            return snapshot
        }
    }

    /// A column's value as text, whatever kind of value it holds; nil when not UTF-8.
    private static func text(_ value: DatabaseValue) -> String? {
        guard case .blob(let data) = value.storage else { return String.fromDatabaseValue(value) }
        return String(validating: data, as: UTF8.self)
    }

    private static func loadInstallations(rejecting rejected: inout [Rejected], in db: Database) throws
        -> [(hub: String, installation: Installation)]
    {
        var loaded: [(hub: String, installation: Installation)] = []
        let installations = try Row.fetchCursor(
            db, sql: "SELECT CAST(hub AS BLOB) AS hub, CAST(id AS BLOB) AS id, CAST(json AS BLOB) AS json FROM installation")
        while let row = try installations.next() {
            let (hub, id) = (Self.bytes(row, "hub"), Self.bytes(row, "id"))
            do {
                guard let hubName = String(validating: hub, as: UTF8.self), let json = text(row["json"]) else {
                    throw QuarantineReason(description: "the row is not UTF-8 text")
                }
                loaded.append((hubName, try Installation.stored(json: json, id: id)))
            } catch {
                rejected.append(
                    (
                        "installation", hub, id,
                        QuarantinedRecord(kind: "installation", storedHub: hub, storedId: id, reason: "\(error)")
                    ))
            }
        }
        return loaded
    }

    private static func loadRegistrations(rejecting rejected: inout [Rejected], in db: Database) throws
        -> [StoredRegistration]
    {
        var loaded: [StoredRegistration] = []
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
                loaded.append(try StoredRegistration.stored(hub: hubName, id: id, xml: xml, created: created, updated: updated))
            } catch {
                rejected.append(
                    (
                        "registration", hub, id,
                        QuarantinedRecord(kind: "registration", storedHub: hub, storedId: id, reason: "\(error)")
                    ))
            }
        }
        return loaded
    }

    /// The claims; a row that is not a token is left out: it could only have been written by hand.
    private static func loadClaimedDevices(in db: Database) throws -> [(hub: String, device: String, secretDigest: String?)] {
        var loaded: [(hub: String, device: String, secretDigest: String?)] = []
        let claims = try Row.fetchCursor(
            db,
            sql: "SELECT CAST(hub AS BLOB) AS hub, CAST(device AS BLOB) AS device, secret_hash FROM sandbox_device")
        while let row = try claims.next() {
            guard let hub = try? row.required("hub", as: Data.self), let device = try? row.required("device", as: Data.self),
                let hubName = String(validating: hub, as: UTF8.self), let token = String(validating: device, as: UTF8.self),
                DeviceToken.isValid(token)
            else { continue }
            let digest = ClaimDigest.stored((try? row.stored("secret_hash", as: String.self)) ?? nil)
            loaded.append((hubName, token.lowercased(), digest))
        }
        return loaded
    }

    /// Moves the rejected records to the quarantine, in the load's transaction.
    private static func quarantine(_ rejected: [Rejected], in db: Database) throws {
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
    }

    /// A column read as bytes, whatever kind of value it holds (the query casts it to a BLOB).
    static func bytes(_ row: Row, _ column: String) -> Data {
        (try? row.stored(column, as: Data.self)) ?? Data()
    }
}
