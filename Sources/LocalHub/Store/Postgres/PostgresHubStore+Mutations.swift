import Foundation
import Logging
import NotificationHubs
import PostgresNIO

/// The mixed batch's writes, in its transaction: one method per kind of mutation, each with
/// its statement; runs of installation upserts and of notification inserts one statement each.
extension PostgresHubStore {
    /// A change a commit logs: what it names.
    typealias LoggedChange = (kind: ChangeKind, hub: String, id: String)

    /// Writes the mutation at `m`, or the run of upserts or inserts that starts there, adding
    /// what it changed to `changes`; answers the index after it.
    func write(
        _ mutations: [HubMutation], from m: Int, now: Double, logging changes: inout [LoggedChange],
        on connection: PostgresConnection
    ) async throws -> Int {
        var next = m
        switch mutations[m] {
        case .upsertInstallation:
            var run: [(hub: String, installation: Installation)] = []
            while next < mutations.endIndex, case .upsertInstallation(let hub, let installation) = mutations[next] {
                run.append((hub, installation))
                next += 1
            }
            try await upsertInstallations(run, on: connection)
            changes += run.map { (.installation, $0.hub, $0.installation.installationId) }
        case .insertNotification:
            var run: [StoredNotification] = []
            while next < mutations.endIndex, case .insertNotification(let n) = mutations[next] {
                run.append(n)
                next += 1
            }
            try await connection.query(insertion(run, now: now, committing: false), logger: logger)
        default:
            if let change = try await write(mutations[m], now: now, on: connection) { changes.append(change) }
            next += 1
        }
        return next
    }

    /// Writes one mutation; answers the change it logs, if any.
    private func write(_ mutation: HubMutation, now: Double, on connection: PostgresConnection) async throws
        -> LoggedChange?
    {
        switch mutation {
        case .upsertInstallation(let hub, let installation):
            try await upsertInstallations([(hub, installation)], on: connection)
            return (.installation, hub, installation.installationId)
        case .insertNotification(let notification):
            try await connection.query(insertion([notification], now: now, committing: false), logger: logger)
        case .deleteInstallation(let hub, let id):
            try await deleteInstallation(hub: hub, id: id, on: connection)
            return (.installation, hub, id)
        case .upsertRegistration(let stored):
            try await upsertRegistration(stored, on: connection)
            return (.registration, stored.hub, stored.id)
        case .deleteRegistration(let hub, let id):
            try await deleteRegistration(hub: hub, id: id, on: connection)
            return (.registration, hub, id)
        case .fireScheduled(let hub, let id):
            try await fireScheduled(hub: hub, id: id, on: connection)
        case .beginDispatch(let hub, let id):
            try await beginDispatch(hub: hub, id: id, on: connection)
        case .cancelScheduled(let hub, let id, let at):
            try await cancelScheduled(hub: hub, id: id, at: at, on: connection)
        case .claimDevice(let hub, let device, let at, let digest):
            let inserted = try await claimDevice(hub: hub, device: device, at: at, digest: digest, on: connection)
            // A renewal changes nothing another node keeps in memory; a new secret does.
            if inserted || digest != nil { return (.builtInPushDevice, hub, device) }
        case .releaseDevice(let hub, let device):
            try await releaseDevice(hub: hub, device: device, on: connection)
            return (.builtInPushDevice, hub, device)
        case .forgetDevice(let hub, let device):
            // Nothing of it is kept in memory on any node: no change to log.
            try await forgetDevice(hub: hub, device: device, on: connection)
        }
        return nil
    }

    /// Upserts a run of installations in one statement; of two with one id, the later.
    private func upsertInstallations(_ run: [(hub: String, installation: Installation)], on connection: PostgresConnection)
        async throws
    {
        let rows = Self.latest(run)
        try await connection.query(
            """
            INSERT INTO installation (hub, id, json)
            SELECT * FROM unnest(\(rows.map(\.hub)), \(rows.map(\.installation.installationId)), \(rows.map(\.installation.json.text)))
            ON CONFLICT (hub, id) DO UPDATE SET json = excluded.json
            """, logger: logger)
    }

    private func deleteInstallation(hub: String, id: String, on connection: PostgresConnection) async throws {
        try await connection.query("DELETE FROM installation WHERE hub = \(hub) AND id = \(id)", logger: logger)
    }

    private func upsertRegistration(_ stored: StoredRegistration, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO registration (hub, id, xml, created, updated)
            VALUES (\(stored.hub), \(stored.id), \(stored.registration.descriptionXML), \(stored.created.timeIntervalSince1970), \(stored.updated.timeIntervalSince1970))
            ON CONFLICT (hub, id) DO UPDATE SET xml = excluded.xml, created = excluded.created, updated = excluded.updated
            """, logger: logger)
    }

    private func deleteRegistration(hub: String, id: String, on connection: PostgresConnection) async throws {
        try await connection.query("DELETE FROM registration WHERE hub = \(hub) AND id = \(id)", logger: logger)
    }

    private func fireScheduled(hub: String, id: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            "UPDATE notification SET state = 'Enqueued' WHERE hub = \(hub) AND id = \(id) AND state = 'Scheduled'",
            logger: logger)
    }

    private func beginDispatch(hub: String, id: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            "UPDATE notification SET starts = starts + 1 WHERE hub = \(hub) AND id = \(id)", logger: logger)
    }

    private func cancelScheduled(hub: String, id: String, at: Date, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            UPDATE notification SET state = \(NotificationDetails.State.cancelled.rawValue), ended = \(at.timeIntervalSince1970)
            WHERE hub = \(hub) AND id = \(id) AND state = 'Scheduled'
            """, logger: logger)
    }

    /// Claims or renews a device; whether the claim is new.
    private func claimDevice(hub: String, device: String, at: Date, digest: String?, on connection: PostgresConnection)
        async throws -> Bool
    {
        try await connection.query(
            """
            INSERT INTO sandbox_device (hub, device, claimed, secret_hash)
            VALUES (\(hub), \(device), \(at.timeIntervalSince1970), \(digest))
            ON CONFLICT (hub, device) DO UPDATE SET claimed = excluded.claimed,
                secret_hash = COALESCE(sandbox_device.secret_hash, excluded.secret_hash)
            RETURNING (xmax = 0) AS inserted
            """, logger: logger
        ).collect().first?.makeRandomAccess()["inserted"].decode(Bool.self) ?? true
    }

    private func releaseDevice(hub: String, device: String, on connection: PostgresConnection) async throws {
        try await connection.query("DELETE FROM sandbox_device WHERE hub = \(hub) AND device = \(device)", logger: logger)
    }

    private func forgetDevice(hub: String, device: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            "DELETE FROM delivery WHERE device = (SELECT id FROM device_ref WHERE hub = \(hub) AND device = \(device))",
            logger: logger)
        try await connection.query("DELETE FROM delivery_v1 WHERE hub = \(hub) AND device = \(device)", logger: logger)
        try await connection.query("DELETE FROM device_gap WHERE hub = \(hub) AND device = \(device)", logger: logger)
    }
}
