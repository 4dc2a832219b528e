import Foundation
import NotificationHubs

/// One batch of the writer: each write resolved against the tables plus the batch's own
/// earlier writes (the overlay), into the mutations the store commits at once and the
/// changes published to the tables after. One method per kind of write.
struct WriteBatch {
    /// A record the batch changed, to publish to the tables after its commit.
    enum Changed {
        case installation(hub: String, id: String)
        case registration(hub: String, id: String)
        case claim(hub: String, device: String, claimed: Bool, digest: String?)

        /// The record, as the change log names it.
        var record: ChangedRecord {
            switch self {
            case .installation(let hub, let id): ChangedRecord(kind: .installation, hub: hub, id: id)
            case .registration(let hub, let id): ChangedRecord(kind: .registration, hub: hub, id: id)
            case .claim(let hub, let device, _, _): ChangedRecord(kind: .builtInPushDevice, hub: hub, id: device)
            }
        }
    }

    let state: HubState
    let limits: HubWriter.Limits
    let coordination: any NodeCoordination
    let claims: ClaimKeeper
    let now: Date

    var mutations: [HubMutation] = []
    var published: [Changed] = []
    /// Notifications accepted (to dispatch, or to schedule), and scheduled ones taken out of
    /// the book (fired or cancelled), in order.
    var enqueued: [StoredNotification] = []
    var unscheduled: [StoredNotification] = []
    /// Records the batch read by id, and how many changes made elsewhere after its position
    /// the hubs it grows can take within their limits: what its commit is checked against
    /// on a shared store (`Resolution`).
    var reads: [Resolution.Read] = []
    var room = Int64.max
    /// A write was answered from the tables without a mutation to check at the commit (a
    /// DELETE of an installation they do not hold): resolved again after catching up.
    var answeredUnwritten = false
    /// Claims the batch noted as renewed now (`ClaimKeeper`): forgotten when it is not
    /// committed, so that the next use writes them.
    var renewalsNoted: [(hub: String, device: String)] = []

    // The overlay: what the batch changed so far, by `key`.
    var installations: [String: Installation?] = [:]
    var registrations: [String: StoredRegistration?] = [:]
    /// Lower-cased id → the id stored now (nil: none), for the case rule.
    var foldedInstallations: [String: String?] = [:]
    var foldedRegistrations: [String: String?] = [:]
    /// Change in the number held, and in the bytes stored, by lower-cased hub.
    var installationDelta: [String: Int] = [:]
    var registrationDelta: [String: Int] = [:]
    var bytesDelta: [String: Int] = [:]
    /// Devices claimed (true) or let go (false), and the change in how many are claimed; the
    /// digests of secrets the batch gave claims.
    var claimed: [String: Bool] = [:]
    var claimDigests: [String: String] = [:]
    var claimDelta: [String: Int] = [:]
    /// Scheduled sends accepted, and their bytes, by lower-cased hub.
    var scheduledDelta: [String: Int] = [:]
    var scheduledBytesDelta: [String: Int] = [:]

    init(state: HubState, limits: HubWriter.Limits, coordination: any NodeCoordination, claims: ClaimKeeper, now: Date) {
        self.state = state
        self.limits = limits
        self.coordination = coordination
        self.claims = claims
        self.now = now
    }

    static func key(_ hub: String, _ id: String) -> String { hub.lowercased() + "\u{0}" + id }

    mutating func resolve(_ request: WriteRequest) -> WriteResolution {
        switch request {
        case .putInstallation(let hub, let installation, let proof): return putInstallation(hub, installation, proof)
        case .patchInstallation(let hub, let id, let operations, let proof):
            return patchInstallation(hub, id, operations, proof)
        case .deleteInstallation(let hub, let id): return deleteInstallation(hub, id)
        case .putRegistration(let hub, let id, let registration, let ifMatch, let proof):
            return putRegistration(hub, id, registration, ifMatch: ifMatch, proof: proof)
        case .deleteRegistration(let hub, let id, let ifMatch): return deleteRegistration(hub, id, ifMatch: ifMatch)
        case .enqueue(let notification): return enqueue(notification)
        case .fireScheduled(let hub, let id): return fireScheduled(hub, id)
        case .cancelScheduled(let hub, let id): return cancelScheduled(hub, id)
        case .claimDevice(let hub, let device, let secret): return claimDevice(hub, device, secret: secret)
        case .renewClaim(let hub, let device): return renewClaim(hub, device)
        case .releaseDevice(let hub, let device, let unlessUsed): return releaseDevice(hub, device, unlessUsed: unlessUsed)
        case .channelGone(let gone): return channelGone(gone)
        case .removeExpired(let record): return removeExpired(record)
        }
    }

    /// The batch was not committed (it failed, or it is resolved again): the claim renewals
    /// it noted are due again.
    func uncommitted() {
        for (hub, device) in renewalsNoted { claims.forget(hub: hub, device: device) }
    }

    /// Sets the batch's changes in the tables, once committed.
    func publish() {
        state.directory.withLock { directory in
            for change in published {
                switch change {
                case .installation(let hub, let id):
                    let stored = installations[Self.key(hub, id)] ?? nil
                    directory.modify(hub) { $0.setInstallation(stored, id: id) }
                case .registration(let hub, let id):
                    let stored = registrations[Self.key(hub, id)] ?? nil
                    directory.modify(hub) { $0.setRegistration(stored, id: id) }
                case .claim(let hub, let device, let claimed, let digest):
                    directory.modify(hub) { HubState.set(claimed, device, digest: digest, in: &$0) }
                }
            }
        }
    }

    // MARK: - The overlay

    func currentInstallation(_ hub: String, _ id: String) -> Installation? {
        if let pending = installations[Self.key(hub, id)] { return pending }
        return state.installation(hub: hub, id: id)
    }

    func currentRegistration(_ hub: String, _ id: String) -> StoredRegistration? {
        if let pending = registrations[Self.key(hub, id)] { return pending }
        return state.registration(hub: hub, id: id)
    }

    /// The id stored under `id`'s lower-cased form and how many the hub holds, as of this
    /// point of the batch.
    func holding(installations: Bool, _ hub: String, _ id: String) -> (folded: String?, count: Int) {
        let key = Self.key(hub, id.lowercased())
        let (stored, count) = state.directory.withLock { directory -> (String?, Int) in
            guard let tables = directory[hub] else { return (nil, 0) }
            return installations
                ? (tables.installationIdsByFolded[id.lowercased()], tables.installations.count)
                : (tables.registrationIdsByFolded[id.lowercased()], tables.registrations.count)
        }
        let pending = installations ? foldedInstallations[key] : foldedRegistrations[key]
        let delta = (installations ? installationDelta : registrationDelta)[hub.lowercased()] ?? 0
        return (pending ?? stored, count + delta)
    }

    /// Whether the hub's stored bytes stay within the budget after `change`; counts it when so.
    mutating func fits(_ hub: String, _ change: Int) -> Bool {
        let key = hub.lowercased()
        if change > 0 {
            let stored = state.directory.withLock { $0[hub]?.storedBytes ?? 0 }
            let left = limits.maximumBytesPerHub - (stored + (bytesDelta[key] ?? 0) + change)
            guard left >= 0 else { return false }
            room = min(room, Int64(left / HubWriter.largestChangeBytes))
        }
        bytesDelta[key, default: 0] += change
        return true
    }

    var overBudget: WriteResolution {
        .quotaExceeded(
            "the hub's installations and registrations would take more than "
                + "\(HubEngine.describeBytes(limits.maximumBytesPerHub)), the most it holds; delete some first")
    }

    /// The one ETag rule: no `If-Match`, or `*`, always passes; otherwise the registration
    /// must exist and its version equal the tag (weak `W/` and quotes ignored). The refusal,
    /// or nil to go on.
    static func checkETag(_ ifMatch: String?, of existing: StoredRegistration?) -> WriteResolution? {
        guard let ifMatch, ifMatch != "*" else { return nil }
        let wanted = ifMatch.replacingOccurrences(of: "W/", with: "").trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
        guard let existing, existing.registration.etag == wanted else {
            return .preconditionFailed("The ETag '\(ifMatch)' does not match the registration's current version")
        }
        return nil
    }

    static func caseConflict(_ what: String, existing: String, id: String) -> WriteResolution {
        .conflict(
            "the \(what) '\(existing)' exists, and '\(id)' differs from it only in case: ids are compared exactly, but a token scoped to one is accepted for the other, so the hub keeps one of them"
        )
    }
}
