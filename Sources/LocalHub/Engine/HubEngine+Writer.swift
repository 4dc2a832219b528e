import Foundation
import Logging
import NotificationHubs
import Synchronization

/// The writer: group commit of installation, registration and notification writes.
extension HubEngine {
    func runWriter() async {
        for await _ in writes.wakeups {
            while true {
                let batch = writes.take(limit: 2048)
                if batch.isEmpty { break }
                await commit(batch)
            }
        }
    }

    /// A record a committed batch changed, to publish to memory.
    enum Changed {
        case installation(hub: String, id: String)
        case registration(hub: String, id: String)
        case claim(hub: String, device: String, claimed: Bool)
    }

    /// What a batch changed so far, consulted before memory by the batch's later writes.
    private struct Overlay {
        var installations: [String: Installation?] = [:]
        var registrations: [String: StoredRegistration?] = [:]
        /// Lower-cased id → the id stored now (nil: none), for the case rule.
        var foldedInstallations: [String: String?] = [:]
        var foldedRegistrations: [String: String?] = [:]
        /// Change in the number held, and in the bytes stored, by lower-cased hub.
        var installationDelta: [String: Int] = [:]
        var registrationDelta: [String: Int] = [:]
        var bytesDelta: [String: Int] = [:]
        /// Devices claimed for the built-in push service (true) or let go (false) in this batch (`key`), and
        /// the change in how many are claimed, by hub.
        var claimedDevices: [String: Bool] = [:]
        var claimDelta: [String: Int] = [:]
        /// Notifications accepted (to dispatch, or to schedule), and scheduled ones taken out
        /// of the book (fired or cancelled), in order.
        var enqueued: [StoredNotification] = []
        var unscheduled: [StoredNotification] = []
        /// Scheduled sends this batch accepted, and their bytes, by lower-cased hub.
        var scheduledDelta: [String: Int] = [:]
        var scheduledBytesDelta: [String: Int] = [:]

        static func key(_ hub: String, _ id: String) -> String { hub.lowercased() + "\u{0}" + id }
    }

    /// Scheduled sends one hub may hold waiting, and the bytes they may take: each keeps its
    /// body in memory until it goes (on `main`, 2,000 of 60 KB took 126 MB).
    static let maximumScheduled = 10_000
    static let maximumScheduledBytes = 16 << 20

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

    /// `256 MB`, `48 KB`: a budget as people say it.
    static func describeBytes(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(bytes >> 20) MB" : "\(max(1, bytes >> 10)) KB"
    }

    static func caseConflict(_ what: String, existing: String, id: String) -> WriteResolution {
        .conflict(
            "the \(what) '\(existing)' exists, and '\(id)' differs from it only in case: ids are compared exactly, but a token scoped to one is accepted for the other, so the hub keeps one of them"
        )
    }

    /// Resolves a batch against memory plus the batch's own earlier changes, commits the
    /// mutations in one transaction, then publishes them and answers each writer.
    private func commit(_ batch: [PendingWrite]) async {
        // On a shared store, checked against what every node committed before.
        if isClustered {
            do {
                try await catchUp()
            } catch {
                for pending in batch { pending.continuation.resume(throwing: error) }
                return
            }
        }
        var overlay = Overlay()
        var mutations: [HubMutation] = []
        var results: [WriteResolution] = []
        var published: [Changed] = []
        let now = Date()
        for pending in batch {
            results.append(resolve(pending.request, overlay: &overlay, mutations: &mutations, published: &published, now: now))
        }
        do {
            try await store.apply(mutations)
        } catch {
            logger.error("commit of \(mutations.count) changes failed: \(error)")
            // Scheduled sends this batch took out of the book are still scheduled in the store.
            schedule.withLock { book in for notification in overlay.unscheduled { book.add(notification) } }
            for pending in batch { pending.continuation.resume(throwing: error) }
            return
        }
        // On a shared store the tables take the batch from the change log, in commit order
        // with every node's writes (publishing it here could set a row older than another
        // node's, read first); every read, the dispatcher and the next batch catch up first.
        if isClustered { published = [] }
        directory.withLock { directory in
            for change in published {
                switch change {
                case .installation(let hub, let id):
                    let stored = overlay.installations[Overlay.key(hub, id)] ?? nil
                    directory.modify(hub) { $0.setInstallation(stored, id: id) }
                case .registration(let hub, let id):
                    let stored = overlay.registrations[Overlay.key(hub, id)] ?? nil
                    directory.modify(hub) { $0.setRegistration(stored, id: id) }
                case .claim(let hub, let device, let claimed):
                    directory.modify(hub) {
                        if claimed { $0.claimedDevices.insert(device) } else { $0.claimedDevices.remove(device) }
                    }
                }
            }
        }
        for notification in overlay.enqueued {
            if notification.state == .scheduled {
                // On a shared store, the node that claims it when due fires it.
                if !isClustered { schedule.withLock { $0.add(notification) } }
                continue
            }
            let waiting = notification.isTest ? waitingOutcomes.withLock { $0.removeValue(forKey: notification.id) } : nil
            if !dispatches.push(DispatchJob(notification: notification, outcome: waiting)) {
                waiting?.fulfil(NotificationOutcome(success: 0, failure: 0, results: []))
            }
        }
        for (pending, result) in zip(batch, results) { pending.continuation.resume(with: result.mapError { $0 as Error }) }
    }

    private func resolve(
        _ request: WriteRequest, overlay: inout Overlay, mutations: inout [HubMutation],
        published: inout [Changed], now: Date
    ) -> WriteResolution {
        func currentInstallation(_ hub: String, _ id: String) -> Installation? {
            if let pending = overlay.installations[Overlay.key(hub, id)] { return pending }
            return heldInstallation(hub: hub, id: id)
        }
        func currentRegistration(_ hub: String, _ id: String) -> StoredRegistration? {
            if let pending = overlay.registrations[Overlay.key(hub, id)] { return pending }
            return heldRegistration(hub: hub, id: id)
        }
        /// The id stored under `id`'s lower-cased form and how many the hub holds, as of this
        /// point of the batch.
        func holding(installations: Bool, _ hub: String, _ id: String) -> (folded: String?, count: Int) {
            let key = Overlay.key(hub, id.lowercased())
            let (stored, count) = directory.withLock { directory -> (String?, Int) in
                guard let tables = directory[hub] else { return (nil, 0) }
                return installations
                    ? (tables.installationIdsByFolded[id.lowercased()], tables.installations.count)
                    : (tables.registrationIdsByFolded[id.lowercased()], tables.registrations.count)
            }
            let pending = installations ? overlay.foldedInstallations[key] : overlay.foldedRegistrations[key]
            let delta = (installations ? overlay.installationDelta : overlay.registrationDelta)[hub.lowercased()] ?? 0
            return (pending ?? stored, count + delta)
        }
        /// Whether the hub's stored bytes stay within the budget after `change`; counts it when so.
        func fits(_ hub: String, _ change: Int) -> Bool {
            let key = hub.lowercased()
            if change > 0 {
                let stored = directory.withLock { $0[hub]?.storedBytes ?? 0 }
                guard stored + (overlay.bytesDelta[key] ?? 0) + change <= maximumBytesPerHub else { return false }
            }
            overlay.bytesDelta[key, default: 0] += change
            return true
        }
        let overBudget = WriteResolution.quotaExceeded(
            "the hub's installations and registrations would take more than \(Self.describeBytes(maximumBytesPerHub)), the most it holds; delete some first"
        )
        switch request {
        case .putInstallation(let hub, let installation):
            let id = installation.installationId
            let current = currentInstallation(hub, id)
            if current == nil {
                let held = holding(installations: true, hub, id)
                if let existing = held.folded { return Self.caseConflict("installation", existing: existing, id: id) }
                guard held.count < maximumPerHub else {
                    return .quotaExceeded("the hub holds \(held.count) installations, the most it may; delete some first")
                }
            }
            guard fits(hub, installation.storedSize - (current?.storedSize ?? 0)) else { return overBudget }
            if current == nil {
                overlay.foldedInstallations[Overlay.key(hub, id.lowercased())] = .some(id)
                overlay.installationDelta[hub.lowercased(), default: 0] += 1
            }
            overlay.installations[Overlay.key(hub, id)] = .some(installation)
            mutations.append(.upsertInstallation(hub: hub, installation))
            published.append(.installation(hub: hub, id: id))
            return .installation(installation)
        case .patchInstallation(let hub, let id, let operations):
            guard let current = currentInstallation(hub, id) else { return .notFound("Installation not found") }
            var installation = current
            do {
                try installation.apply(operations)
                installation = try installation.validatedForStorage(lastUpdate: W3CDate.format(now))
            } catch {
                return .invalid(error.description)
            }
            guard fits(hub, installation.storedSize - current.storedSize) else { return overBudget }
            overlay.installations[Overlay.key(hub, id)] = .some(installation)
            mutations.append(.upsertInstallation(hub: hub, installation))
            published.append(.installation(hub: hub, id: id))
            return .installation(installation)
        case .deleteInstallation(let hub, let id):
            guard let current = currentInstallation(hub, id) else { return .done }
            _ = fits(hub, -current.storedSize)
            overlay.installations[Overlay.key(hub, id)] = .some(nil)
            overlay.foldedInstallations[Overlay.key(hub, id.lowercased())] = .some(nil)
            overlay.installationDelta[hub.lowercased(), default: 0] -= 1
            mutations.append(.deleteInstallation(hub: hub, id: id))
            published.append(.installation(hub: hub, id: id))
            return .done
        case .putRegistration(let hub, let requestedId, var registration, let ifMatch):
            let id = requestedId ?? Self.makeRegistrationId()
            let existing = currentRegistration(hub, id)
            if let refused = Self.checkETag(ifMatch, of: existing) { return refused }
            if existing == nil {
                let held = holding(installations: false, hub, id)
                if let other = held.folded { return Self.caseConflict("registration", existing: other, id: id) }
                guard held.count < maximumPerHub else {
                    return .quotaExceeded("the hub holds \(held.count) registrations, the most it may; delete some first")
                }
            }
            guard fits(hub, registration.storedSize - (existing?.registration.storedSize ?? 0)) else { return overBudget }
            if existing == nil {
                overlay.foldedRegistrations[Overlay.key(hub, id.lowercased())] = .some(id)
                overlay.registrationDelta[hub.lowercased(), default: 0] += 1
            }
            registration.registrationId = id
            registration.etag = String((Int(existing?.registration.etag ?? "0") ?? 0) + 1)
            registration.expirationTime = registration.expirationTime.flatMap(W3CDate.normalize) ?? W3CDate.never
            let stored = StoredRegistration(hub: hub, registration: registration, created: existing?.created ?? now, updated: now)
            overlay.registrations[Overlay.key(hub, id)] = .some(stored)
            mutations.append(.upsertRegistration(stored))
            published.append(.registration(hub: hub, id: id))
            return .registration(stored)
        case .deleteRegistration(let hub, let id, let ifMatch):
            guard let existing = currentRegistration(hub, id) else { return .notFound("Registration not found") }
            if let refused = Self.checkETag(ifMatch, of: existing) { return refused }
            _ = fits(hub, -existing.registration.storedSize)
            overlay.registrations[Overlay.key(hub, id)] = .some(nil)
            overlay.foldedRegistrations[Overlay.key(hub, id.lowercased())] = .some(nil)
            overlay.registrationDelta[hub.lowercased(), default: 0] -= 1
            mutations.append(.deleteRegistration(hub: hub, id: id))
            published.append(.registration(hub: hub, id: id))
            return .done
        case .enqueue(let notification):
            if notification.state == .scheduled {
                let key = notification.hub.lowercased()
                let waiting = schedule.withLock { $0.count(hub: notification.hub) } + (overlay.scheduledDelta[key] ?? 0)
                guard waiting < Self.maximumScheduled else {
                    return .quotaExceeded(
                        "the hub holds \(waiting) scheduled sends, the most it may; cancel some or wait for them to go")
                }
                let size = ScheduleBook.size(notification)
                let held = schedule.withLock { $0.bytes(hub: notification.hub) } + (overlay.scheduledBytesDelta[key] ?? 0)
                guard held + size <= Self.maximumScheduledBytes else {
                    return .quotaExceeded(
                        "the hub's scheduled sends hold \(Self.describeBytes(held)) waiting, and this one would pass the "
                            + "\(Self.describeBytes(Self.maximumScheduledBytes)) they may; cancel some or wait for them to go")
                }
                overlay.scheduledDelta[key, default: 0] += 1
                overlay.scheduledBytesDelta[key, default: 0] += size
            }
            mutations.append(.insertNotification(notification))
            overlay.enqueued.append(notification)
            return .done
        case .fireScheduled(let hub, let id):
            guard var notification = schedule.withLock({ $0.remove(hub: hub, id: id) }) else {
                return .notFound("The scheduled notification '\(id)' is not waiting")
            }
            overlay.unscheduled.append(notification)
            notification.state = .enqueued
            mutations.append(.fireScheduled(hub: hub, id: id))
            overlay.enqueued.append(notification)
            return .done
        case .cancelScheduled(let hub, let id):
            guard let notification = schedule.withLock({ $0.remove(hub: hub, id: id) }) else {
                return .notFound("No scheduled notification '\(id)' is waiting: it was sent, cancelled, or never scheduled")
            }
            overlay.unscheduled.append(notification)
            mutations.append(.cancelScheduled(hub: hub, id: id, at: now))
            return .done
        case .claimDevice(let hub, let device):
            let held = directory.withLock { $0[hub].map { ($0.claimedDevices.contains(device), $0.claimedDevices.count) } }
            guard let (isClaimed, count) = held else { return .notFound("The hub '\(hub)' is not served") }
            let key = Overlay.key(hub, device)
            if overlay.claimedDevices[key] ?? isClaimed {
                // Held already: renewed, at most once an hour (each renewal is a write).
                if claimRenewalDue(hub: hub, device: device, now: now) {
                    mutations.append(.claimDevice(hub: hub, device: device, at: now))
                }
                return .done
            }
            guard count + (overlay.claimDelta[hub.lowercased()] ?? 0) < maximumPerHub else {
                return .quotaExceeded(
                    "the hub's built-in push service holds \(count) devices, the most it may; devices no terminal "
                        + "used for \(Self.describeDays(claimLifetime)) are let go, and an operator can remove some "
                        + "('breaking-news hub devices remove')")
            }
            overlay.claimedDevices[key] = true
            overlay.claimDelta[hub.lowercased(), default: 0] += 1
            _ = claimRenewalDue(hub: hub, device: device, now: now)
            mutations.append(.claimDevice(hub: hub, device: device, at: now))
            published.append(.claim(hub: hub, device: device, claimed: true))
            return .done
        case .releaseDevice(let hub, let device):
            guard let isClaimed = directory.withLock({ $0[hub]?.claimedDevices.contains(device) }) else {
                return .notFound("The hub '\(hub)' is not served")
            }
            let key = Overlay.key(hub, device)
            guard overlay.claimedDevices[key] ?? isClaimed else {
                return .notFound("The device is not claimed for the built-in push service")
            }
            overlay.claimedDevices[key] = false
            overlay.claimDelta[hub.lowercased(), default: 0] -= 1
            mutations.append(.releaseDevice(hub: hub, device: device))
            published.append(.claim(hub: hub, device: device, claimed: false))
            return .done
        case .channelGone(let gone):
            let (owners, claimed) = directory.withLock {
                ($0[gone.hub]?.ownersByDevice[gone.device] ?? [], $0[gone.hub]?.claimedDevices.contains(gone.device) ?? false)
            }
            // A terminal's channel is never marked: a claim made since the send wins.
            guard !claimed else { return .done }
            for owner in owners.sorted() {
                let id = String(owner.dropFirst(2))
                if owner.hasPrefix("i:") {
                    guard var installation = currentInstallation(gone.hub, id), installation.platform == gone.platform,
                        let handle = installation.pushChannel?.handle,
                        TagIndex.device(handle, platform: gone.platform) == gone.device, installation.pushChannelExpired != true
                    else { continue }
                    installation.pushChannelExpired = true
                    overlay.installations[Overlay.key(gone.hub, id)] = .some(installation)
                    mutations.append(.upsertInstallation(hub: gone.hub, installation))
                    published.append(.installation(hub: gone.hub, id: id))
                } else if gone.platform == .apns, let existing = currentRegistration(gone.hub, id),
                    existing.registration.deviceToken.lowercased() == gone.device
                {
                    _ = fits(gone.hub, -existing.registration.storedSize)
                    overlay.registrations[Overlay.key(gone.hub, id)] = .some(nil)
                    overlay.foldedRegistrations[Overlay.key(gone.hub, id.lowercased())] = .some(nil)
                    overlay.registrationDelta[gone.hub.lowercased(), default: 0] -= 1
                    mutations.append(.deleteRegistration(hub: gone.hub, id: id))
                    published.append(.registration(hub: gone.hub, id: id))
                }
            }
            return .done
        }
    }
}
