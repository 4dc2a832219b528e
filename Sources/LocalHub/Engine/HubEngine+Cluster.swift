import Foundation
import NotificationHubs

/// The engine as one node of several on a shared store (`ClusterFollower`).
extension HubEngine {
    /// Whether this engine shares its store with other nodes.
    public var isClustered: Bool { follower != nil }

    /// Catches the tables up with every write committed by any node before this call: what
    /// a read does first on a shared store (read-your-writes across nodes). Nothing to do on
    /// a store of its own.
    public func catchUp() async throws {
        try await follower?.changes.refresh()
    }

    /// What `/healthz` says of the store: whether it answers, and a line naming it.
    public func storeHealth() async -> (healthy: Bool, line: String) {
        guard let follower else {
            return (true, "store: \(store is SQLiteHubStore ? "sqlite" : "memory")")
        }
        do {
            _ = try await follower.store.changeHead()
            return (true, "store: postgres, node \(follower.store.node)")
        } catch {
            return (false, "store: postgres unreachable (\(error)), node \(follower.store.node)")
        }
    }

    /// Sets rows other nodes changed (or this one: the same rows again) in the tables.
    func applyChanges(_ changes: [StoredChange]) {
        let quarantined = changes.filter(\.quarantined).count
        if quarantined > 0 { metrics.addQuarantined(quarantined) }
        directory.withLock { directory in
            for change in changes {
                switch change.row {
                case .installation(let hub, let id, let installation):
                    directory.modify(hub) { $0.setInstallation(installation, id: id) }
                case .registration(let hub, let id, let stored):
                    directory.modify(hub) { $0.setRegistration(stored, id: id) }
                case .claim(let hub, let device, let claimed):
                    directory.modify(hub) {
                        if claimed { $0.claimedDevices.insert(device) } else { $0.claimedDevices.remove(device) }
                    }
                }
            }
        }
    }

    /// Queues notifications this node claimed: ones a stopped node left, scheduled ones due.
    func dispatchClaimed(_ notifications: [StoredNotification]) {
        for notification in notifications { dispatches.push(DispatchJob(notification: notification, outcome: nil)) }
    }
}
