import Foundation
import Logging
import NotificationHubs
import PostgresNIO

extension PostgresHubStore {
    /// A record that failed to decode at load, to be moved to the quarantine.
    typealias Rejected = (table: String, hub: String, id: String, record: QuarantinedRecord)

    public func load() async throws -> HubSnapshot {
        try await transaction { connection in
            var snapshot = HubSnapshot()
            var rejected: [Rejected] = []
            snapshot.installations = try await self.loadInstallations(rejecting: &rejected, on: connection)
            snapshot.registrations = try await self.loadRegistrations(rejecting: &rejected, on: connection)
            snapshot.claimedDevices = try await self.loadClaimedDevices(on: connection)
            try await self.quarantine(rejected, on: connection)
            snapshot.quarantined = rejected.map(\.record)
            let total = try await connection.query("SELECT COUNT(*) FROM quarantine", logger: self.logger).collect()
            snapshot.quarantinedTotal = try Int(total.first?.decode(Int64.self) ?? 0)
            return snapshot
        }
    }

    private func loadInstallations(rejecting rejected: inout [Rejected], on connection: PostgresConnection) async throws
        -> [(hub: String, installation: Installation)]
    {
        var installations: [(hub: String, installation: Installation)] = []
        for try await row in try await connection.query("SELECT hub, id, json FROM installation", logger: logger) {
            let (hub, id, json) = try row.decode((String, String, String).self)
            do {
                installations.append((hub, try Installation.stored(json: json, id: id.utf8)))
            } catch {
                rejected.append(
                    (
                        "installation", hub, id,
                        QuarantinedRecord(kind: "installation", storedHub: hub.utf8, storedId: id.utf8, reason: "\(error)")
                    ))
            }
        }
        return installations
    }

    private func loadRegistrations(rejecting rejected: inout [Rejected], on connection: PostgresConnection) async throws
        -> [StoredRegistration]
    {
        var registrations: [StoredRegistration] = []
        for try await row in try await connection.query(
            "SELECT hub, id, xml, created, updated FROM registration", logger: logger)
        {
            let (hub, id, xml, created, updated) = try row.decode((String, String, String, Double, Double).self)
            do {
                registrations.append(
                    try StoredRegistration.stored(hub: hub, id: id.utf8, xml: xml, created: created, updated: updated))
            } catch {
                rejected.append(
                    (
                        "registration", hub, id,
                        QuarantinedRecord(kind: "registration", storedHub: hub.utf8, storedId: id.utf8, reason: "\(error)")
                    ))
            }
        }
        return registrations
    }

    private func loadClaimedDevices(on connection: PostgresConnection) async throws
        -> [(hub: String, device: String, secretDigest: String?)]
    {
        var devices: [(hub: String, device: String, secretDigest: String?)] = []
        for try await row in try await connection.query(
            "SELECT hub, device, secret_hash FROM sandbox_device", logger: logger)
        {
            let (hub, device, digest) = try row.decode((String, String, String?).self)
            if DeviceToken.isValid(device) {
                devices.append((hub, device.lowercased(), ClaimDigest.stored(digest)))
            }
        }
        return devices
    }

    /// Moves the rejected records to the quarantine, in the load's transaction.
    private func quarantine(_ rejected: [Rejected], on connection: PostgresConnection) async throws {
        let now = Date().timeIntervalSince1970
        for entry in rejected {
            let body = entry.table == "installation" ? "json" : "xml"
            try await connection.query(
                PostgresQuery(
                    unsafeSQL: """
                        INSERT INTO quarantine (kind, hub, id, body, reason, at)
                        SELECT $1, convert_to(hub, 'UTF8'), convert_to(id, 'UTF8'), convert_to(\(body), 'UTF8'), $2, $3
                        FROM \(entry.table) WHERE hub = $4 AND id = $5
                        """,
                    binds: Self.binds(entry.table, entry.record.reason, now, entry.hub, entry.id)), logger: logger)
            try await connection.query(
                PostgresQuery(
                    unsafeSQL: "DELETE FROM \(entry.table) WHERE hub = $1 AND id = $2", binds: Self.binds(entry.hub, entry.id)),
                logger: logger)
        }
    }
}
