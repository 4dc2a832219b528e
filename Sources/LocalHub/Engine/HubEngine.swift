import Foundation
import Logging
import NotificationHubs
import Synchronization

/// The hub without HTTP: in-memory tables and tag index, the writer that makes changes
/// durable before they are visible, the dispatcher that renders and delivers notifications,
/// and the live device streams of the built-in push service.
public final class HubEngine: Sendable {
    let store: any HubStore
    let streams: DeviceStreams
    /// Following the other nodes, when the store is shared by several (`SharedHubStore`).
    let follower: ClusterFollower?
    /// The push services, by kind: the built-in one always, external ones when given.
    let pushServices: [PushServiceKind: any PushService]
    /// The same services in their kinds' order (the built-in one first), the order a dispatch
    /// numbers and hands out messages in.
    let pushOrder: [any PushService]
    public let metrics: HubMetrics
    /// Installations, and legacy registrations, one hub may hold.
    public let maximumPerHub: Int
    /// Bytes their strings may take in all, per hub (`Installation.storedSize`).
    public let maximumBytesPerHub: Int
    /// At most this many devices are reached by a test send, as on the service.
    public let testSendLimit: Int
    /// How long a claim of the built-in push service holds without use (`HubEngine+Claims`).
    public let claimLifetime: TimeInterval
    /// When each claim was last written, this start (renewals are written at most hourly).
    let claimRenewals = Mutex<[String: Date]>([:])
    let directory: Mutex<HubDirectory>
    let hubNames: [String]
    /// The configured name of each hub by its lower-cased form, as `HubDirectory` keys them.
    let canonicalNames: [String: String]
    let writes = WorkQueue<PendingWrite>()
    let dispatches = WorkQueue<DispatchJob>()
    /// Scheduled notifications waiting to fire.
    let schedule = Mutex(ScheduleBook())
    /// Dispatches waiting on real push services: at most `realDispatchLimit`; cancelled
    /// when the engine stops (their notifications are dispatched again at restart).
    let realDispatches = StreamLimit(HubEngine.realDispatchLimit)
    let realTasks = Mutex<(next: Int, running: [Int: Task<Void, Never>], stopped: Bool)>((0, [:], false))
    let logger: Logger
    private let notificationCounter = Mutex<UInt64>(0)
    /// The next delivery number and the end of the reserved block (dispatcher only).
    let sequence = Mutex<(next: Int64, reserved: Int64)>((1, 0))
    private let loadedEpoch = Mutex<String>("")

    /// The store's epoch, read at start.
    public var epoch: String { loadedEpoch.withLock { $0 } }

    /// What the hub delivered, as the routes read it.
    public var deliveries: DeliveryLog { DeliveryLog(store: store, streams: streams, epoch: epoch) }

    /// Streams open now, for `/metrics`.
    public var openStreams: Int { streams.count }

    /// Ends every open stream and refuses new ones: the server is shutting down, and a
    /// stream would otherwise hold its connection to the end.
    public func closeStreams() { streams.closeAll() }

    /// A notification the hub accepted, with its state and outcomes.
    public func notification(hub: String, id: String) async throws -> StoredNotification? {
        try await store.notification(hub: hub, id: id)
    }

    struct PendingWrite: Sendable {
        let request: WriteRequest
        let continuation: UnsafeContinuation<WriteResult, Error>
    }

    struct DispatchJob: Sendable {
        let notification: StoredNotification
        let outcome: OutcomePromise?
    }

    /// Seconds between keep-alive comments on idle device streams.
    public let keepAliveInterval: Double

    public init(
        store: any HubStore, hubs: [String], testSendLimit: Int = 10, keepAliveInterval: Double = 15,
        maximumInstallationsPerHub: Int = 100_000, maximumBytesPerHub: Int = 256 << 20, maximumStreamsPerDevice: Int = 16,
        maximumStreams: Int = .max, maximumStreamsPerClient: Int = 0, pushServices: [any PushService] = [],
        claimLifetime: TimeInterval = 7 * 86_400, logger: Logger = Logger(label: "local-hub")
    ) {
        self.claimLifetime = claimLifetime
        self.store = store
        let streams = DeviceStreams(
            maximumPerDevice: maximumStreamsPerDevice, maximum: maximumStreams, maximumPerClient: maximumStreamsPerClient)
        self.streams = streams
        let follower = (store as? any SharedHubStore).map { ClusterFollower(store: $0, logger: logger) }
        self.follower = follower
        metrics = HubMetrics(node: follower?.store.node)
        // Worked out in a function: a loop in this initializer, before every stored property
        // is set, crashes Swift 6.3's optimizer (an ownership verification error around the
        // Mutex properties' defaults), so `make bench` and release builds could not build.
        // On a shared store, streams get deliveries from the store's feed, after their commit:
        // numbers are given at commit there, in the order every node sees them.
        (self.pushServices, self.pushOrder) = Self.services(
            builtIn: BuiltInPushService(streams: streams, publishesBeforeCommit: follower == nil), others: pushServices)
        self.maximumPerHub = maximumInstallationsPerHub
        self.maximumBytesPerHub = maximumBytesPerHub
        self.keepAliveInterval = keepAliveInterval
        self.hubNames = hubs
        self.canonicalNames = Self.canonicalNames(hubs)
        self.directory = Mutex(HubDirectory(names: hubs))
        self.testSendLimit = testSendLimit
        self.logger = logger
    }

    /// The built-in push service, and each service given (a later one of a kind replaces an
    /// earlier); by kind, and in the kinds' order.
    private static func services(builtIn: BuiltInPushService, others: [any PushService]) -> (
        [PushServiceKind: any PushService], [any PushService]
    ) {
        var services: [PushServiceKind: any PushService] = [.builtIn: builtIn]
        for service in others { services[service.kind] = service }
        return (services, services.values.sorted { $0.kind < $1.kind })
    }

    /// Each name by its lower-cased form; of two differing only in case, the last, as in
    /// `HubDirectory`.
    private static func canonicalNames(_ hubs: [String]) -> [String: String] {
        var names: [String: String] = [:]
        for name in hubs { names[name.lowercased()] = name }
        return names
    }

    // MARK: Life cycle

    /// Loads the stored state into memory and queues notifications left undispatched.
    public func start() async throws {
        let storeEpoch = try await store.epoch()
        loadedEpoch.withLock { $0 = storeEpoch }
        let highWater = try await store.sequenceHighWater()
        sequence.withLock { $0 = (highWater + 1, highWater) }
        let changeHead = try await follower?.store.changeHead()
        let snapshot = try await store.load()
        for record in snapshot.quarantined {
            logger.error(
                "quarantined the \(record.kind) '\(record.id)' of hub '\(record.hub)': \(record.reason); it is kept in the quarantine table"
            )
        }
        metrics.setQuarantined(snapshot.quarantinedTotal)
        directory.withLock { directory in
            for (hub, installation) in snapshot.installations {
                directory.modify(hub) { $0.setInstallation(installation, id: installation.installationId) }
            }
            for stored in snapshot.registrations {
                directory.modify(stored.hub) { $0.setRegistration(stored, id: stored.id) }
            }
            for (hub, device) in snapshot.claimedDevices {
                directory.modify(hub) { _ = $0.claimedDevices.insert(device) }
            }
        }
        if let follower, let changeHead {
            let own = try await follower.store.takeBackClaims(now: Date())
            if !own.isEmpty { logger.info("resuming \(own.count) notifications this node had accepted before it stopped") }
            dispatchClaimed(own)
            // Scheduled sends, and sends other nodes accepted, are claimed from the store.
            follower.start(changesFrom: changeHead, deliveriesFrom: highWater) { [weak self] in self?.applyChanges($0) }
            return
        }
        let scheduled = try await store.scheduledNotifications()
        schedule.withLock { book in for notification in scheduled { book.add(notification) } }
        let unfinished = try await store.unfinishedNotifications()
        for notification in unfinished { dispatches.push(DispatchJob(notification: notification, outcome: nil)) }
        if !unfinished.isEmpty { logger.info("resuming \(unfinished.count) undispatched notifications") }
    }

    /// Runs the writer and the dispatcher until cancelled.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.runWriter() }
            group.addTask { await self.runDispatcher() }
            let ticker = Task { await self.streams.runKeepAlive(every: self.keepAliveInterval) }
            keepAliveTicker.withLock { $0 = ticker }
            // Not in the group: stopping ends the writer and the dispatcher by closing their
            // queues, and the scheduler by cancelling it.
            let scheduler = Task { await self.runScheduler() }
            let claims = Task { await self.runClaimExpiry() }
            claimExpiryTask.withLock { $0 = claims }
            if let follower {
                // Not in the group either: stopping cancels them.
                let following = [
                    Task { await follower.runFeed { self.streams.publish($0) } },
                    Task { await follower.runWakeups() },
                    Task { await follower.runClaims { self.dispatchClaimed($0) } },
                ]
                followerTasks.withLock { $0 = following }
            }
            schedulerTask.withLock { $0 = scheduler }
            await withTaskCancellationHandler {
                await group.waitForAll()
            } onCancel: {
                self.stop()
            }
        }
    }

    private let keepAliveTicker = Mutex<Task<Void, Never>?>(nil)
    private let schedulerTask = Mutex<Task<Void, Never>?>(nil)
    private let claimExpiryTask = Mutex<Task<Void, Never>?>(nil)
    private let followerTasks = Mutex<[Task<Void, Never>]>([])

    /// Stops taking work; waiting writers get an error.
    public func stop() {
        keepAliveTicker.withLock { $0?.cancel() }
        schedulerTask.withLock { $0?.cancel() }
        claimExpiryTask.withLock { $0?.cancel() }
        follower?.stop()
        for task in followerTasks.withLock({ $0 }) { task.cancel() }
        let running = realTasks.withLock { tasks in
            tasks.stopped = true
            return tasks.running.values
        }
        for task in running { task.cancel() }
        for pending in writes.close() { pending.continuation.resume(throwing: EngineStopped()) }
        for job in dispatches.close() { job.outcome?.fulfil(NotificationOutcome(success: 0, failure: 0, results: [])) }
    }

    struct EngineStopped: Error, CustomStringConvertible {
        var description: String { "the hub is shutting down" }
    }

    // MARK: Reads

    /// The configured name of a hub given in any case, or nil when it is not served.
    /// Read without the directory's lock: the hubs served never change, and a request that
    /// waited for the writer's lock here would wait for a whole batch to be published.
    public func hubName(_ name: String) -> String? { canonicalNames[name.lowercased()] }

    /// The installation as every write acknowledged before this call left it (on a shared
    /// store, after catching up with the other nodes).
    public func installation(hub: String, id: String) async throws -> Installation? {
        try await catchUp()
        return heldInstallation(hub: hub, id: id)
    }

    /// The registration as every write acknowledged before this call left it.
    public func registration(hub: String, id: String) async throws -> StoredRegistration? {
        try await catchUp()
        return heldRegistration(hub: hub, id: id)
    }

    /// Whether this node's tables hold the installation now (no catch-up: for counting, not
    /// for answers).
    public func holdsInstallation(hub: String, id: String) -> Bool { heldInstallation(hub: hub, id: id) != nil }
    public func holdsRegistration(hub: String, id: String) -> Bool { heldRegistration(hub: hub, id: id) != nil }

    func heldInstallation(hub: String, id: String) -> Installation? {
        directory.withLock { $0[hub]?.installations[id] }
    }

    func heldRegistration(hub: String, id: String) -> StoredRegistration? {
        directory.withLock { $0[hub]?.registrations[id] }
    }

    /// One page of what `GET /{hub}/registrations` lists: legacy registrations by id, then
    /// installations by id, each as its native registration and one per template by name, as
    /// the service projects them; those carrying `tag` or of `deviceToken` when given. Works
    /// on a snapshot of the hub's tables (copy-on-write: taking it under the lock copies
    /// nothing), so writes never wait for a listing; matching entries are filtered and
    /// sorted, but only the page's entries are built.
    public func registrationFeed(hub: String, tag: String?, deviceToken: String?, start: Int, limit: Int) async throws
        -> FeedPage
    {
        try await catchUp()
        guard let tables = directory.withLock({ $0[hub] }) else { return FeedPage() }
        let device = deviceToken?.lowercased()
        var page = FeedPage()
        var position = 0
        /// Counts one entry; whether it falls in the page.
        func take() -> Bool {
            defer { position += 1 }
            return position >= start && page.count < limit
        }
        let legacy = tables.registrations.values.filter { stored in
            (tag.map { stored.registration.tags.contains($0) } ?? true)
                && (device.map { stored.registration.deviceToken.lowercased() == $0 } ?? true)
        }
        for stored in legacy.sorted(by: { $0.id < $1.id }) where take() { page.stored.append(stored) }
        let installations = tables.installations.values.filter { installation in
            guard installation.platform == .apns, let handle = installation.pushChannel?.handle else { return false }
            return device.map { handle.lowercased() == $0 } ?? true
        }
        for installation in installations.sorted(by: { $0.installationId < $1.installationId }) {
            let handle = installation.pushChannel?.handle ?? ""
            let tags = installation.effectiveTags
            if tag.map({ tags.contains($0) }) ?? true, take() {
                var native = Registration(kind: .appleNative, deviceToken: handle, tags: tags)
                native.registrationId = TagIndex.projectedRegistrationId(
                    hub: tables.name, owner: installation.installationId, template: "")
                native.etag = "1"
                native.expirationTime = installation.expirationTime
                page.projected.append(native)
            }
            for (name, template) in (installation.templates ?? [:]).sorted(by: { $0.key < $1.key }) {
                let templateTags = tags + (template.tags ?? [name])
                guard tag.map({ templateTags.contains($0) }) ?? true, take() else { continue }
                var projected = Registration(
                    kind: .appleTemplate, deviceToken: handle, tags: templateTags, bodyTemplate: template.body,
                    templateName: name)
                projected.registrationId = TagIndex.projectedRegistrationId(
                    hub: tables.name, owner: installation.installationId, template: name)
                projected.etag = "1"
                projected.expiry = template.expiry
                projected.expirationTime = installation.expirationTime
                page.projected.append(projected)
            }
        }
        page.total = position
        return page
    }

    public var installationCount: Int { directory.withLock { $0.installationCount } }
    public var registrationCount: Int { directory.withLock { $0.registrationCount } }

    // MARK: Writes

    /// Applies a change; returns once it is durable and visible to reads.
    public func write(_ request: WriteRequest) async throws -> WriteResult {
        // Unchecked: the writer resumes each pending write exactly once (after its commit,
        // on a failed commit, or when the queue closes), and a checked continuation costs an
        // allocation per request.
        try await withUnsafeThrowingContinuation { continuation in
            if !writes.push(PendingWrite(request: request, continuation: continuation)) {
                continuation.resume(throwing: EngineStopped())
            }
        }
    }

    /// Accepts a notification (durably) and queues it for dispatch.
    public func enqueue(_ notification: StoredNotification) async throws {
        _ = try await write(.enqueue(notification))
        metrics.send(format: notification.format.rawValue)
    }

    /// Accepts a test notification, dispatches it, and returns the outcome of its devices.
    public func enqueueTest(_ notification: StoredNotification) async throws -> NotificationOutcome {
        var test = notification
        test.isTest = true
        let promise = OutcomePromise()
        waitingOutcomes.withLock { $0[test.id] = promise }
        do {
            _ = try await write(.enqueue(test))
        } catch {
            waitingOutcomes.withLock { _ = $0.removeValue(forKey: test.id) }
            throw error
        }
        metrics.send(format: notification.format.rawValue)
        return await promise.value
    }

    let waitingOutcomes = Mutex<[String: OutcomePromise]>([:])

    /// A new notification id in the service's shape: `<32 hex>-<yyyyMMddHHmmss>-<n>`.
    public func makeNotificationId(now: Date = Date()) -> String {
        let n = notificationCounter.withLock { value -> UInt64 in
            value += 1
            return value
        }
        let stamp = W3CDate.format(now).prefix(19).filter(\.isNumber)
        let hex = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        return "\(hex)-\(stamp)-\(n)"
    }

    /// A new registration id in the service's shape: three dash-separated numbers.
    public static func makeRegistrationId() -> String {
        "\(UInt64.random(in: 1_000_000_000_000_000_000...9_000_000_000_000_000_000))-\(UInt64.random(in: 1_000_000_000_000_000_000...9_000_000_000_000_000_000))-\(Int.random(in: 1...99))"
    }
}

/// One page of the registration feed.
public struct FeedPage: Sendable {
    /// Legacy registrations on the page, then installations projected as registrations.
    public var stored: [StoredRegistration] = []
    public var projected: [Registration] = []
    /// Entries matching in all, on every page.
    public var total = 0

    public var count: Int { stored.count + projected.count }
}

/// A test send's outcome, set once by the dispatcher and awaited by the request.
final class OutcomePromise: Sendable {
    private let state = Mutex<(value: NotificationOutcome?, waiters: [CheckedContinuation<NotificationOutcome, Never>])>(
        (nil, []))

    func fulfil(_ outcome: NotificationOutcome) {
        let waiters = state.withLock { state -> [CheckedContinuation<NotificationOutcome, Never>] in
            guard state.value == nil else { return [] }
            state.value = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }

    var value: NotificationOutcome {
        get async {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> NotificationOutcome? in
                    if let value = state.value { return value }
                    state.waiters.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}
