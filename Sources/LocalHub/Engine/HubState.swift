import Foundation
import NotificationHubs
import Synchronization

/// How the hub knows a device token.
public enum DeviceStanding: Sendable, Equatable {
    /// Claimed for the built-in push service.
    case claimed
    /// Not claimed, but the handle of an installation or registration of the hub.
    case registered
    /// Neither: nothing will ever be delivered to it.
    case unknown
}

/// The hubs' tables in memory, which every part of the engine reads: changed only after a
/// change is durable, by the writer (one node) or by following the other nodes' changes.
final class HubState: Sendable {
    let directory: Mutex<HubDirectory>
    let names: [String]
    /// The configured name of each hub by its lower-cased form, as `HubDirectory` keys them.
    private let canonicalNames: [String: String]

    init(hubs: [String]) {
        names = hubs
        directory = Mutex(HubDirectory(names: hubs))
        var canonical: [String: String] = [:]
        // Of two names differing only in case, the last, as in `HubDirectory`.
        for name in hubs { canonical[name.lowercased()] = name }
        canonicalNames = canonical
    }

    /// The configured name of a hub given in any case, or nil when it is not served. Read
    /// without the lock: the hubs served never change, and a request that waited for the
    /// writer's lock here would wait for a whole batch to be published.
    func hubName(_ name: String) -> String? { canonicalNames[name.lowercased()] }

    /// A hub's tables now (copy-on-write: taking them under the lock copies nothing).
    func tables(_ hub: String) -> HubTables? { directory.withLock { $0[hub] } }

    func installation(hub: String, id: String) -> Installation? { directory.withLock { $0[hub]?.installations[id] } }

    func registration(hub: String, id: String) -> StoredRegistration? { directory.withLock { $0[hub]?.registrations[id] } }

    func standing(hub: String, device: String) -> DeviceStanding {
        let device = device.lowercased()
        return directory.withLock { directory in
            guard let tables = directory[hub] else { return .unknown }
            if tables.claimedDevices.contains(device) { return .claimed }
            return tables.ownersByDevice[device]?.isEmpty == false ? .registered : .unknown
        }
    }

    /// Whether an installation or registration uses the device as its handle.
    func isUsed(hub: String, device: String) -> Bool {
        directory.withLock { $0[hub]?.ownersByDevice[device]?.isEmpty == false }
    }

    func claimedDevices(hub: String) -> Set<String> { directory.withLock { $0[hub]?.claimedDevices ?? [] } }

    var installationCount: Int { directory.withLock { $0.installationCount } }
    var registrationCount: Int { directory.withLock { $0.registrationCount } }

    /// Sets what a store loaded.
    func load(_ snapshot: HubSnapshot) {
        directory.withLock { Self.fill(&$0, with: snapshot) }
    }

    /// Replaces everything held with what a store loaded: rows the snapshot lacks are gone.
    /// The new tables are built before the lock is taken, so reads wait only for the swap.
    func reload(_ snapshot: HubSnapshot) {
        var fresh = HubDirectory(names: names)
        Self.fill(&fresh, with: snapshot)
        directory.withLock { $0 = fresh }
    }

    private static func fill(_ directory: inout HubDirectory, with snapshot: HubSnapshot) {
        for (hub, installation) in snapshot.installations {
            directory.modify(hub) { $0.setInstallation(installation, id: installation.installationId) }
        }
        for stored in snapshot.registrations {
            directory.modify(stored.hub) { $0.setRegistration(stored, id: stored.id) }
        }
        for (hub, device, digest) in snapshot.claimedDevices {
            directory.modify(hub) { Self.set(true, device, digest: digest, in: &$0) }
        }
    }

    /// Sets rows as the change log reads them now (other nodes' writes, or this one's).
    func apply(_ changes: [StoredChange]) {
        directory.withLock { directory in
            for change in changes {
                switch change.row {
                case .applied: continue
                case .installation(let hub, let id, let installation):
                    directory.modify(hub) { $0.setInstallation(installation, id: id) }
                case .registration(let hub, let id, let stored):
                    directory.modify(hub) { $0.setRegistration(stored, id: id) }
                case .claim(let hub, let device, let claimed, let digest):
                    directory.modify(hub) { Self.set(claimed, device, digest: digest, in: &$0) }
                }
            }
        }
    }

    /// Installations and registrations whose expiry has passed at `now`, at most `limit`.
    func expired(at now: Date, limit: Int) -> [ExpiredRecord] {
        let tables = directory.withLock { Array($0.tables.values) }
        var found: [ExpiredRecord] = []
        for hub in tables {
            for (id, installation) in hub.installations where found.count < limit {
                if ExpiredRecord.hasExpired(installation.expirationTime, at: now) {
                    found.append(ExpiredRecord(hub: hub.name, id: id, isInstallation: true))
                }
            }
            for (id, stored) in hub.registrations where found.count < limit {
                if ExpiredRecord.hasExpired(stored.registration.expirationTime, at: now) {
                    found.append(ExpiredRecord(hub: hub.name, id: id, isInstallation: false))
                }
            }
        }
        return found
    }

    /// A claim held (with its secret's digest, when it has one; nil keeps the one it has) or let go.
    static func set(_ claimed: Bool, _ device: String, digest: String?, in tables: inout HubTables) {
        if claimed {
            tables.claimedDevices.insert(device)
            if let digest { tables.claimSecrets[device] = digest }
        } else {
            tables.claimedDevices.remove(device)
            tables.claimSecrets[device] = nil
        }
    }

    /// Whether a request about `device` that carries `secret` speaks for its terminal: a
    /// device not claimed, or claimed before claims had secrets, asks for no proof; a claimed
    /// one asks for its claim's secret, compared in constant time.
    func provesClaim(hub: String, device: String, secret: String?) -> Bool {
        let device = device.lowercased()
        guard let digest = directory.withLock({ $0[hub]?.claimSecrets[device] }) else { return true }
        guard let secret, BuiltInPushClaim.isSecret(secret) else { return false }
        return ConstantTime.equal(BuiltInPushClaim.digest(secret), digest)
    }
}
