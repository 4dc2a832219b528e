import Foundation
import GRDB
import NotificationHubs

/// A batch of mutations, in one transaction; each statement prepared once per connection
/// (GRDB's cache), not once per change.
extension SQLiteHubStore {
    @discardableResult
    public func apply(_ mutations: [HubMutation]) async throws -> ClosedRange<Int64>? {
        guard !mutations.isEmpty else { return nil }
        try await pool.write { db in
            for mutation in mutations { try Self.write(mutation, in: db) }
        }
        return nil
    }

    private static func write(_ mutation: HubMutation, in db: Database) throws {
        switch mutation {
        case .upsertInstallation(let hub, let installation):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO installation (hub, id, json) VALUES (?, ?, ?)")
                .execute(arguments: [hub, installation.installationId, installation.json.text])
        case .deleteInstallation(let hub, let id):
            try db.cachedStatement(sql: "DELETE FROM installation WHERE hub = ? AND id = ?").execute(arguments: [hub, id])
        case .upsertRegistration(let stored):
            try db.cachedStatement(
                sql: "INSERT OR REPLACE INTO registration (hub, id, xml, created, updated) VALUES (?, ?, ?, ?, ?)"
            ).execute(arguments: [
                stored.hub, stored.id, stored.registration.descriptionXML, stored.created.timeIntervalSince1970,
                stored.updated.timeIntervalSince1970,
            ])
        case .deleteRegistration(let hub, let id):
            try db.cachedStatement(sql: "DELETE FROM registration WHERE hub = ? AND id = ?").execute(arguments: [hub, id])
        case .insertNotification(let n):
            try db.execute(
                sql: """
                    INSERT INTO notification (hub, id, format, tags, body, headers, direct_handle, test, enqueued, state, started, ended, outcome, fire_at, direct_handles, starts)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: Self.notificationArguments(n))
        case .fireScheduled, .cancelScheduled, .beginDispatch:
            try writeSchedule(mutation, in: db)
        case .claimDevice, .releaseDevice, .forgetDevice:
            try writeDevice(mutation, in: db)
        }
    }

    /// A scheduled notification fired or cancelled, or a dispatch begun.
    private static func writeSchedule(_ mutation: HubMutation, in db: Database) throws {
        switch mutation {
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
        default:
            try write(mutation, in: db)
        }
    }

    /// A device of the built-in push service claimed, released or forgotten.
    private static func writeDevice(_ mutation: HubMutation, in db: Database) throws {
        switch mutation {
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
        default:
            try write(mutation, in: db)
        }
    }
}
