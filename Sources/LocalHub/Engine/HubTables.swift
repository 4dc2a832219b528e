import Foundation
import NotificationHubs

/// The in-memory state of one hub: installations, registrations and their tag index,
/// rebuilt from the store at start and changed only after a change is durable.
struct HubTables: Sendable {
    /// The hub's name as configured.
    let name: String
    var installations: [String: Installation] = [:]
    var registrations: [String: StoredRegistration] = [:]
    /// Ids by their lower-cased form: no two may differ in case only (`HubEngine` refuses a
    /// second one), because a token scoped to one id is accepted for any case of it.
    var installationIdsByFolded: [String: String] = [:]
    var registrationIdsByFolded: [String: String] = [:]
    var index = TagIndex()
    /// What the installations and registrations take as stored (`storedSize`): the budget
    /// that bounds what a hub holds in memory.
    var storedBytes = 0
    /// APNs tokens of terminals, claimed for the built-in push service: never sent to Apple.
    var claimedDevices: Set<String> = []
    /// The digest of each claim's secret (`BuiltInPushClaim.digest`); a claimed device without
    /// one was claimed before claims had secrets.
    var claimSecrets: [String: String] = [:]
    /// Installation and registration ids by device handle (`TagIndex.device`), keyed as the
    /// tag index keys owners: where a push service's feedback about a handle lands.
    var ownersByDevice: [String: Set<String>] = [:]

    init(name: String) {
        self.name = name
    }

    mutating func setInstallation(_ installation: Installation?, id: String) {
        storedBytes += (installation?.storedSize ?? 0) - (installations[id]?.storedSize ?? 0)
        let owner = TagIndex.ownerKey(installation: id)
        if let old = installations[id], let handle = old.pushChannel?.handle {
            untrack(owner, device: TagIndex.device(handle, platform: old.platform))
        }
        if let installation, let handle = installation.pushChannel?.handle {
            ownersByDevice[TagIndex.device(handle, platform: installation.platform), default: []].insert(owner)
        }
        installations[id] = installation
        Self.track(id, present: installation != nil, in: &installationIdsByFolded)
        index.setInstallation(installation, id: id, hub: name)
    }

    mutating func setRegistration(_ stored: StoredRegistration?, id: String) {
        storedBytes += (stored?.registration.storedSize ?? 0) - (registrations[id]?.registration.storedSize ?? 0)
        let owner = TagIndex.ownerKey(registration: id)
        if let old = registrations[id] { untrack(owner, device: old.registration.deviceToken.lowercased()) }
        if let stored { ownersByDevice[stored.registration.deviceToken.lowercased(), default: []].insert(owner) }
        registrations[id] = stored
        Self.track(id, present: stored != nil, in: &registrationIdsByFolded)
        index.setRegistration(stored?.registration, id: id)
    }

    /// Changed in place: taking the set out to change it copied every owner of the device,
    /// once per change, so installations sharing one token cost time in their number squared.
    private mutating func untrack(_ owner: String, device: String) {
        guard let at = ownersByDevice.index(forKey: device) else { return }
        ownersByDevice.values[at].remove(owner)
        if ownersByDevice.values[at].isEmpty { ownersByDevice.remove(at: at) }
    }

    private static func track(_ id: String, present: Bool, in folded: inout [String: String]) {
        let key = id.lowercased()
        if present {
            folded[key] = id
        } else if folded[key] == id {
            folded[key] = nil
        }
    }
}

/// The hubs a server serves, looked up by name ignoring case.
struct HubDirectory: Sendable {
    private(set) var tables: [String: HubTables] = [:]

    init(names: [String]) {
        for name in names { tables[name.lowercased()] = HubTables(name: name) }
    }

    /// The configured name of a hub, from a path segment in any case.
    func canonicalName(_ name: String) -> String? { tables[name.lowercased()]?.name }

    /// A hub's tables, for reading.
    subscript(hub: String) -> HubTables? { tables[hub.lowercased()] }

    /// Changes a hub's tables in place. (A get-then-set through a subscript would copy the
    /// whole tag index on every change.)
    mutating func modify(_ hub: String, _ change: (inout HubTables) -> Void) {
        let key = hub.lowercased()
        guard tables[key] != nil else { return }
        change(&tables[key]!)
    }

    var installationCount: Int { tables.values.reduce(0) { $0 + $1.installations.count } }
    var registrationCount: Int { tables.values.reduce(0) { $0 + $1.registrations.count } }
}
