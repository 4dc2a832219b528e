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
    }

    let state: HubState
    let limits: HubWriter.Limits
    let coordination: any NodeCoordination
    let claims: ClaimKeeper
    let now: Date

    private(set) var mutations: [HubMutation] = []
    private(set) var published: [Changed] = []
    /// Notifications accepted (to dispatch, or to schedule), and scheduled ones taken out of
    /// the book (fired or cancelled), in order.
    private(set) var enqueued: [StoredNotification] = []
    private(set) var unscheduled: [StoredNotification] = []
    /// Records the batch read by id, and how many changes made elsewhere after its position
    /// the hubs it grows can take within their limits: what its commit is checked against
    /// on a shared store (`Resolution`).
    private(set) var reads: [Resolution.Read] = []
    private(set) var room = Int64.max
    /// A write was answered from the tables without a mutation to check at the commit (a
    /// DELETE of an installation they do not hold): resolved again after catching up.
    private(set) var answeredUnwritten = false
    /// Claims the batch noted as renewed now (`ClaimKeeper`): forgotten when it is not
    /// committed, so that the next use writes them.
    private var renewalsNoted: [(hub: String, device: String)] = []

    // The overlay: what the batch changed so far, by `key`.
    private var installations: [String: Installation?] = [:]
    private var registrations: [String: StoredRegistration?] = [:]
    /// Lower-cased id → the id stored now (nil: none), for the case rule.
    private var foldedInstallations: [String: String?] = [:]
    private var foldedRegistrations: [String: String?] = [:]
    /// Change in the number held, and in the bytes stored, by lower-cased hub.
    private var installationDelta: [String: Int] = [:]
    private var registrationDelta: [String: Int] = [:]
    private var bytesDelta: [String: Int] = [:]
    /// Devices claimed (true) or let go (false), and the change in how many are claimed; the
    /// digests of secrets the batch gave claims.
    private var claimed: [String: Bool] = [:]
    private var claimDigests: [String: String] = [:]
    private var claimDelta: [String: Int] = [:]
    /// Scheduled sends accepted, and their bytes, by lower-cased hub.
    private var scheduledDelta: [String: Int] = [:]
    private var scheduledBytesDelta: [String: Int] = [:]

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
        case .releaseDevice(let hub, let device): return releaseDevice(hub, device)
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

    // MARK: - Installations

    private mutating func putInstallation(_ hub: String, _ given: Installation, _ proof: ClaimProof) -> WriteResolution {
        guard mayName(hub, given.pushChannel?.handle, platform: given.platform, proof) else { return Self.claimedChannel }
        var installation = given
        installation.expirationTime = expiry(given.expirationTime)
        let id = installation.installationId
        reads.append(Resolution.Read(kind: "i", hub: hub, id: id, exact: false))
        let current = currentInstallation(hub, id)
        if current == nil {
            let held = holding(installations: true, hub, id)
            if let existing = held.folded { return Self.caseConflict("installation", existing: existing, id: id) }
            guard held.count < limits.maximumPerHub else {
                return .quotaExceeded("the hub holds \(held.count) installations, the most it may; delete some first")
            }
            room = min(room, Int64(limits.maximumPerHub - held.count - 1))
        }
        guard fits(hub, installation.storedSize - (current?.storedSize ?? 0)) else { return overBudget }
        if current == nil {
            foldedInstallations[Self.key(hub, id.lowercased())] = .some(id)
            installationDelta[hub.lowercased(), default: 0] += 1
        }
        setInstallation(hub, id, installation)
        return .installation(installation)
    }

    private mutating func patchInstallation(
        _ hub: String, _ id: String, _ operations: [InstallationPatchOperation], _ proof: ClaimProof
    ) -> WriteResolution {
        reads.append(Resolution.Read(kind: "i", hub: hub, id: id, exact: true))
        guard let current = currentInstallation(hub, id) else { return .notFound("Installation not found") }
        var installation = current
        do {
            try installation.apply(operations)
            installation = try installation.validatedForStorage(lastUpdate: W3CDate.format(now))
        } catch {
            return .invalid(error.description)
        }
        guard mayName(hub, installation.pushChannel?.handle, platform: installation.platform, proof) else {
            return Self.claimedChannel
        }
        guard fits(hub, installation.storedSize - current.storedSize) else { return overBudget }
        setInstallation(hub, id, installation)
        return .installation(installation)
    }

    /// Whether a write may name `handle` (of `platform`) as a push channel. A device token
    /// claimed with a secret is named only with that secret (its terminal) or by an operator
    /// (Manage): another's installation on it would keep what was delivered to the token after
    /// its terminal let it go, and put news of its own in the terminal's log. The claim is
    /// read (a commit checks it against a claim made since on another node).
    private mutating func mayName(_ hub: String, _ handle: String?, platform: Platform, _ proof: ClaimProof) -> Bool {
        guard let handle, platform == .apns, DeviceToken.isValid(handle) else { return true }
        let device = TagIndex.device(handle, platform: platform)
        let key = Self.key(hub, device)
        reads.append(Resolution.Read(kind: "s", hub: hub, id: device, exact: true))
        if claimed[key] == false { return true }
        guard let digest = claimDigests[key] ?? state.directory.withLock({ $0[hub]?.claimSecrets[device] }) else {
            return true
        }
        switch proof {
        case .manage: return true
        case .secret(let secret): return SandboxClaim.isSecret(secret) && ConstantTime.equal(SandboxClaim.digest(secret), digest)
        case .none: return false
        }
    }

    static let claimedChannel = WriteResolution.conflict(
        "The push channel is a device token a terminal claimed for the built-in push service: only its terminal names it, "
            + "with its claim's secret (\(SandboxDelivery.claimSecretHeader))")

    private mutating func deleteInstallation(_ hub: String, _ id: String) -> WriteResolution {
        reads.append(Resolution.Read(kind: "i", hub: hub, id: id, exact: true))
        guard let current = currentInstallation(hub, id) else {
            answeredUnwritten = true
            return .done
        }
        _ = fits(hub, -current.storedSize)
        installations[Self.key(hub, id)] = .some(nil)
        foldedInstallations[Self.key(hub, id.lowercased())] = .some(nil)
        installationDelta[hub.lowercased(), default: 0] -= 1
        mutations.append(.deleteInstallation(hub: hub, id: id))
        published.append(.installation(hub: hub, id: id))
        return .done
    }

    /// The expiry a written installation or registration gets: the one it names, else the
    /// hub's time-to-live from now (`--installation-ttl`), else never.
    private func expiry(_ given: String?) -> String? {
        guard let ttl = limits.installationTTL, given == nil || given == W3CDate.never else { return given }
        return W3CDate.format(now.addingTimeInterval(ttl))
    }

    /// Retention's removal of what expired, unless it was renewed since it was found.
    private mutating func removeExpired(_ record: ExpiredRecord) -> WriteResolution {
        if record.isInstallation {
            reads.append(Resolution.Read(kind: "i", hub: record.hub, id: record.id, exact: true))
            guard let current = currentInstallation(record.hub, record.id),
                ExpiredRecord.hasExpired(current.expirationTime, at: now)
            else { return .done }
            return deleteInstallation(record.hub, record.id)
        }
        reads.append(Resolution.Read(kind: "r", hub: record.hub, id: record.id, exact: true))
        guard let current = currentRegistration(record.hub, record.id),
            ExpiredRecord.hasExpired(current.registration.expirationTime, at: now)
        else { return .done }
        removeRegistration(record.hub, record.id, current)
        return .done
    }

    private mutating func setInstallation(_ hub: String, _ id: String, _ installation: Installation) {
        installations[Self.key(hub, id)] = .some(installation)
        mutations.append(.upsertInstallation(hub: hub, installation))
        published.append(.installation(hub: hub, id: id))
    }

    // MARK: - Registrations

    private mutating func putRegistration(
        _ hub: String, _ requestedId: String?, _ given: Registration, ifMatch: String?, proof: ClaimProof
    ) -> WriteResolution {
        guard mayName(hub, given.deviceToken, platform: .apns, proof) else { return Self.claimedChannel }
        let id = requestedId ?? HubEngine.makeRegistrationId()
        reads.append(Resolution.Read(kind: "r", hub: hub, id: id, exact: true))
        let existing = currentRegistration(hub, id)
        if let refused = Self.checkETag(ifMatch, of: existing) { return refused }
        if existing == nil {
            let held = holding(installations: false, hub, id)
            if let other = held.folded { return Self.caseConflict("registration", existing: other, id: id) }
            guard held.count < limits.maximumPerHub else {
                return .quotaExceeded("the hub holds \(held.count) registrations, the most it may; delete some first")
            }
            room = min(room, Int64(limits.maximumPerHub - held.count - 1))
        }
        guard fits(hub, given.storedSize - (existing?.registration.storedSize ?? 0)) else { return overBudget }
        if existing == nil {
            foldedRegistrations[Self.key(hub, id.lowercased())] = .some(id)
            registrationDelta[hub.lowercased(), default: 0] += 1
        }
        var registration = given
        registration.registrationId = id
        registration.etag = String((Int(existing?.registration.etag ?? "0") ?? 0) + 1)
        registration.expirationTime = expiry(registration.expirationTime.flatMap(W3CDate.normalize)) ?? W3CDate.never
        let stored = StoredRegistration(hub: hub, registration: registration, created: existing?.created ?? now, updated: now)
        registrations[Self.key(hub, id)] = .some(stored)
        mutations.append(.upsertRegistration(stored))
        published.append(.registration(hub: hub, id: id))
        return .registration(stored)
    }

    private mutating func deleteRegistration(_ hub: String, _ id: String, ifMatch: String?) -> WriteResolution {
        reads.append(Resolution.Read(kind: "r", hub: hub, id: id, exact: true))
        guard let existing = currentRegistration(hub, id) else { return .notFound("Registration not found") }
        if let refused = Self.checkETag(ifMatch, of: existing) { return refused }
        removeRegistration(hub, id, existing)
        return .done
    }

    private mutating func removeRegistration(_ hub: String, _ id: String, _ existing: StoredRegistration) {
        _ = fits(hub, -existing.registration.storedSize)
        registrations[Self.key(hub, id)] = .some(nil)
        foldedRegistrations[Self.key(hub, id.lowercased())] = .some(nil)
        registrationDelta[hub.lowercased(), default: 0] -= 1
        mutations.append(.deleteRegistration(hub: hub, id: id))
        published.append(.registration(hub: hub, id: id))
    }

    // MARK: - Notifications

    private mutating func enqueue(_ notification: StoredNotification) -> WriteResolution {
        if notification.state == .scheduled {
            let key = notification.hub.lowercased()
            let held = coordination.scheduledHeld(hub: notification.hub)
            let waiting = held.count + (scheduledDelta[key] ?? 0)
            guard waiting < HubWriter.maximumScheduled else {
                return .quotaExceeded(
                    "the hub holds \(waiting) scheduled sends, the most it may; cancel some or wait for them to go")
            }
            let size = ScheduleBook.size(notification)
            let bytes = held.bytes + (scheduledBytesDelta[key] ?? 0)
            guard bytes + size <= HubWriter.maximumScheduledBytes else {
                return .quotaExceeded(
                    "the hub's scheduled sends hold \(HubEngine.describeBytes(bytes)) waiting, and this one would pass the "
                        + "\(HubEngine.describeBytes(HubWriter.maximumScheduledBytes)) they may; cancel some or wait for "
                        + "them to go")
            }
            scheduledDelta[key, default: 0] += 1
            scheduledBytesDelta[key, default: 0] += size
        }
        mutations.append(.insertNotification(notification))
        enqueued.append(notification)
        return .done
    }

    private mutating func fireScheduled(_ hub: String, _ id: String) -> WriteResolution {
        guard var notification = unschedule(hub, id) else {
            return .notFound("The scheduled notification '\(id)' is not waiting")
        }
        notification.state = .enqueued
        mutations.append(.fireScheduled(hub: hub, id: id))
        enqueued.append(notification)
        return .done
    }

    private mutating func cancelScheduled(_ hub: String, _ id: String) -> WriteResolution {
        guard unschedule(hub, id) != nil else {
            return .notFound("No scheduled notification '\(id)' is waiting: it was sent, cancelled, or never scheduled")
        }
        mutations.append(.cancelScheduled(hub: hub, id: id, at: now))
        return .done
    }

    /// Takes a waiting scheduled send out of the book (it fires or is cancelled), noting it
    /// in case the commit fails; nil when it is not waiting.
    private mutating func unschedule(_ hub: String, _ id: String) -> StoredNotification? {
        guard let notification = coordination.takeScheduled(hub: hub, id: id) else { return nil }
        unscheduled.append(notification)
        return notification
    }

    // MARK: - Claims and channels

    /// Claims a token for its terminal. A token not claimed is claimed with a new secret,
    /// unless an installation or registration already uses it (an iPhone's: a terminal claims
    /// before it registers); a token claimed is claimed again only with its claim's secret
    /// (nothing changes: only use renews a claim), or, claimed before claims had secrets, is
    /// given one. The secret is answered once; the hub keeps its digest only.
    private mutating func claimDevice(_ hub: String, _ device: String, secret: String?) -> WriteResolution {
        let held = state.directory.withLock {
            $0[hub].map { ($0.claimedDevices.contains(device), $0.claimSecrets[device], $0.claimedDevices.count) }
        }
        guard let (wasClaimed, storedDigest, count) = held else { return .notFound("The hub '\(hub)' is not served") }
        let key = Self.key(hub, device)
        // On a shared store, a claim of the token committed on another node since these tables'
        // position moves this batch: resolved again, it meets that claim (409).
        reads.append(Resolution.Read(kind: "s", hub: hub, id: device, exact: true))
        if claimed[key] ?? wasClaimed {
            guard let digest = claimDigests[key] ?? storedDigest else { return issueSecret(hub, device, key) }
            guard let secret, SandboxClaim.isSecret(secret), ConstantTime.equal(SandboxClaim.digest(secret), digest) else {
                return .conflict(
                    "The device token is claimed by another terminal; a terminal claims it again with the secret its claim "
                        + "answered (\(SandboxDelivery.claimSecretHeader))")
            }
            return .claimed(secret: nil)
        }
        guard !isUsed(hub, device) else {
            return .conflict(
                "The device token is the push channel of an installation or registration that never claimed it (an "
                    + "iPhone's); a terminal claims its token before it registers it")
        }
        guard count + (claimDelta[hub.lowercased()] ?? 0) < limits.maximumPerHub else {
            return .quotaExceeded(
                "the hub's built-in push service holds \(count) devices, the most it may; devices no terminal "
                    + "used for \(ClaimKeeper.describe(claims.lifetime)) are let go, and an operator can remove some "
                    + "('breaking-news hub devices remove')")
        }
        claimed[key] = true
        claimDelta[hub.lowercased(), default: 0] += 1
        if claims.renewalDue(hub: hub, device: device) { renewalsNoted.append((hub, device)) }
        return issueSecret(hub, device, key)
    }

    /// Gives a claim a new secret: its digest written and published, the secret answered.
    private mutating func issueSecret(_ hub: String, _ device: String, _ key: String) -> WriteResolution {
        let secret = SandboxClaim.makeSecret()
        let digest = SandboxClaim.digest(secret)
        claimDigests[key] = digest
        mutations.append(.claimDevice(hub: hub, device: device, at: now, secretDigest: digest))
        published.append(.claim(hub: hub, device: device, claimed: true, digest: digest))
        return .claimed(secret: secret)
    }

    /// Renews a claim in use (at most once an hour per device: each renewal is a write).
    private mutating func renewClaim(_ hub: String, _ device: String) -> WriteResolution {
        guard
            state.directory.withLock({ $0[hub]?.claimedDevices.contains(device) }) == true
                || claimed[Self.key(hub, device)] == true
        else { return .done }
        if claims.renewalDue(hub: hub, device: device) {
            renewalsNoted.append((hub, device))
            mutations.append(.claimDevice(hub: hub, device: device, at: now))
        }
        return .done
    }

    private mutating func releaseDevice(_ hub: String, _ device: String) -> WriteResolution {
        guard let isClaimed = state.directory.withLock({ $0[hub]?.claimedDevices.contains(device) }) else {
            return .notFound("The hub '\(hub)' is not served")
        }
        let key = Self.key(hub, device)
        guard claimed[key] ?? isClaimed else { return .notFound(WriteRefusal.notClaimed) }
        claimed[key] = false
        claimDigests[key] = nil
        claimDelta[hub.lowercased(), default: 0] -= 1
        mutations.append(.releaseDevice(hub: hub, device: device))
        published.append(.claim(hub: hub, device: device, claimed: false, digest: nil))
        // Nothing holds the device any more: nothing of it is kept either (a terminal that
        // unregisters deletes its installation first, then lets its claim go).
        if !isUsed(hub, device) { mutations.append(.forgetDevice(hub: hub, device: device)) }
        return .done
    }

    /// Whether an installation or registration uses `device`, as of this point of the batch.
    private func isUsed(_ hub: String, _ device: String) -> Bool {
        let owners = state.directory.withLock { $0[hub]?.ownersByDevice[device] ?? [] }
        for owner in owners {
            let id = String(owner.dropFirst(2))
            if owner.hasPrefix("i:") {
                if let installation = currentInstallation(hub, id), let handle = installation.pushChannel?.handle,
                    TagIndex.device(handle, platform: installation.platform) == device
                {
                    return true
                }
            } else if let registration = currentRegistration(hub, id),
                registration.registration.deviceToken.lowercased() == device
            {
                return true
            }
        }
        // Written earlier in this batch, not yet in the tables.
        let prefix = hub.lowercased() + "\u{0}"
        for (key, pending) in installations where key.hasPrefix(prefix) {
            if let installation = pending, let handle = installation.pushChannel?.handle,
                TagIndex.device(handle, platform: installation.platform) == device
            {
                return true
            }
        }
        for (key, pending) in registrations where key.hasPrefix(prefix) {
            if let registration = pending, registration.registration.deviceToken.lowercased() == device { return true }
        }
        return false
    }

    /// A push service said a channel is gone: its installations are marked expired and its
    /// legacy registrations removed. A terminal's channel is never marked: a claim made since
    /// the send wins.
    private mutating func channelGone(_ gone: ChannelGone) -> WriteResolution {
        let (owners, isClaimed) = state.directory.withLock {
            ($0[gone.hub]?.ownersByDevice[gone.device] ?? [], $0[gone.hub]?.claimedDevices.contains(gone.device) ?? false)
        }
        guard !isClaimed else { return .done }
        for owner in owners.sorted() {
            let id = String(owner.dropFirst(2))
            if owner.hasPrefix("i:") {
                guard var installation = currentInstallation(gone.hub, id), installation.platform == gone.platform,
                    let handle = installation.pushChannel?.handle,
                    TagIndex.device(handle, platform: gone.platform) == gone.device, installation.pushChannelExpired != true
                else { continue }
                installation.pushChannelExpired = true
                reads.append(Resolution.Read(kind: "i", hub: gone.hub, id: id, exact: true))
                setInstallation(gone.hub, id, installation)
            } else if gone.platform == .apns, let existing = currentRegistration(gone.hub, id),
                existing.registration.deviceToken.lowercased() == gone.device
            {
                reads.append(Resolution.Read(kind: "r", hub: gone.hub, id: id, exact: true))
                removeRegistration(gone.hub, id, existing)
            }
        }
        return .done
    }

    // MARK: - The overlay

    private func currentInstallation(_ hub: String, _ id: String) -> Installation? {
        if let pending = installations[Self.key(hub, id)] { return pending }
        return state.installation(hub: hub, id: id)
    }

    private func currentRegistration(_ hub: String, _ id: String) -> StoredRegistration? {
        if let pending = registrations[Self.key(hub, id)] { return pending }
        return state.registration(hub: hub, id: id)
    }

    /// The id stored under `id`'s lower-cased form and how many the hub holds, as of this
    /// point of the batch.
    private func holding(installations: Bool, _ hub: String, _ id: String) -> (folded: String?, count: Int) {
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
    private mutating func fits(_ hub: String, _ change: Int) -> Bool {
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

    private var overBudget: WriteResolution {
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
