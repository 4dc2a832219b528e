import Foundation
import Logging
import NotificationHubs
import Synchronization

/// The hub without HTTP: a thin facade over its parts, which own their state — the tables
/// (`HubState`), the writer that makes changes durable before they are visible
/// (`HubWriter`), the dispatcher that plans and delivers notifications (`HubDispatcher`,
/// `DispatchPlanner`), claim expiry (`ClaimKeeper`), the device streams of the built-in push
/// service, and how this node works with others, if any (`NodeCoordination`). Reads that
/// must see every acknowledged write catch up inside the engine.
public final class HubEngine: Sendable {
    let store: any HubStore
    let state: HubState
    let streams: DeviceStreams
    let coordination: any NodeCoordination
    let writes = WriteQueue()
    let writer: HubWriter
    let dispatcher: HubDispatcher
    let claims: ClaimKeeper
    let retention: RetentionKeeper
    let explainer: SendExplainer
    public let metrics: HubMetrics
    let logger: Logger
    /// Time between keep-alive comments on idle device streams.
    public let keepAliveInterval: Duration
    private let notificationCounter = Mutex<UInt64>(0)
    private let loadedEpoch = Mutex<String>("")
    /// Ends `run` (the loops that run until cancelled).
    private let stopping = AsyncStream<Void>.makeStream()

    /// Backs off a store that failed to write: from 50 ms to 5 s.
    static let storeBackoff = HubDispatcher.storeBackoff
    /// The furthest ahead a send may be scheduled, as on the service.
    public static let longestSchedule: TimeInterval = 7 * 24 * 3600

    /// An engine on `store`, run as `configuration` says, delivering through the built-in
    /// push service and `pushServices` (the real ones, `ExternalPushServices`).
    public init(
        store: any HubStore, configuration: Configuration, pushServices: [any PushService] = [],
        logger: Logger = Logger(label: "local-hub")
    ) {
        self.store = store
        self.logger = logger
        self.keepAliveInterval = configuration.keepAliveInterval
        let state = HubState(hubs: configuration.hubs)
        self.state = state
        let streams = DeviceStreams(
            maximumPerDevice: configuration.maximumStreamsPerDevice, maximum: configuration.maximumStreams,
            maximumPerClient: configuration.maximumStreamsPerClient)
        self.streams = streams
        let (metrics, coordination) = Self.coordination(store: store, state: state, streams: streams, logger: logger)
        (self.metrics, self.coordination) = (metrics, coordination)
        let services = Self.services(builtIn: BuiltInPushService(streams: streams, handOff: coordination), others: pushServices)
        explainer = SendExplainer(services: services)
        let claims = ClaimKeeper(lifetime: configuration.claimLifetime, reserveWindow: configuration.claimReserveWindow)
        self.claims = claims
        let retention = RetentionKeeper(policy: configuration.retention)
        self.retention = retention
        let dispatcher = HubDispatcher(
            state: state, store: store, coordination: coordination,
            planner: DispatchPlanner(services: services, testLimit: configuration.testSendLimit), writes: writes,
            metrics: metrics, logGrowth: retention.growth, logger: logger)
        self.dispatcher = dispatcher
        writer = HubWriter(
            writes: writes, state: state, coordination: coordination, dispatcher: dispatcher, claims: claims,
            limits: HubWriter.Limits(
                maximumPerHub: configuration.maximumInstallationsPerHub,
                maximumBytesPerHub: configuration.maximumBytesPerHub,
                installationTTL: configuration.retention.installationTTL),
            logger: logger)
    }

    /// How this node works with others: alone on its store, or one of the nodes sharing it.
    private static func coordination(store: any HubStore, state: HubState, streams: DeviceStreams, logger: Logger)
        -> (HubMetrics, any NodeCoordination)
    {
        guard let shared = store as? any SharedHubStore else {
            return (HubMetrics(node: nil), SingleNode(store: store, streams: streams, logger: logger))
        }
        let metrics = HubMetrics(node: shared.node)
        return (metrics, SharedDatabase(store: shared, state: state, streams: streams, metrics: metrics, logger: logger))
    }

    /// The built-in service, and each service given (a later one of a kind replaces an
    /// earlier), by kind.
    private static func services(builtIn: BuiltInPushService, others: [any PushService]) -> [PushServiceKind: any PushService] {
        var services: [PushServiceKind: any PushService] = [.builtIn: builtIn]
        for service in others { services[service.kind] = service }
        return services
    }

    // MARK: Life cycle

    /// Loads the stored state into memory and queues the notifications this node dispatches.
    public func start() async throws {
        let storeEpoch = try await store.epoch()
        loadedEpoch.withLock { $0 = storeEpoch }
        try await coordination.prepare()
        let snapshot = try await store.load()
        Self.report(quarantineOf: snapshot, metrics: metrics, logger: logger)
        state.load(snapshot)
        dispatcher.accept(claimed: try await coordination.resume())
    }

    /// The store's delivery high-water mark, read at start. One out of range (a doctored
    /// database) is logged and taken as 2^62, past which nothing is numbered: the hub serves
    /// everything else, and each send is abandoned with the reason (`explain` shows it).
    static func sequenceHighWater(of store: any HubStore, logger: Logger) async throws -> Int64 {
        do {
            return try await store.sequenceHighWater()
        } catch  where StoreFailure.isPermanent(error) {
            logger.error(
                "\(error): sends will be abandoned until the hub is restored from a backup (breaking-news hub backup, then hub restore), which numbers its log afresh"
            )
            return StoredRange.sequence.upperBound
        }
    }

    /// Logs each record a load set aside, and counts them in `/metrics`.
    static func report(quarantineOf snapshot: HubSnapshot, metrics: HubMetrics, logger: Logger) {
        for record in snapshot.quarantined {
            logger.error(
                "quarantined the \(record.kind) '\(record.id)' of hub '\(record.hub)': \(record.reason); it is kept in the quarantine table"
            )
        }
        metrics.setQuarantined(snapshot.quarantinedTotal)
    }

    /// Runs the writer, the dispatcher and the node's loops until `stop` (or cancellation).
    public func run() async {
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                // The writer and the dispatcher end when their queues close.
                group.addTask { await self.writer.run() }
                group.addTask { await self.dispatcher.run() }
                group.addTask {
                    // The loops run until cancelled: when `stop` ends `stopping`.
                    await withDiscardingTaskGroup { loops in
                        loops.addTask { await self.streams.runKeepAlive(every: self.keepAliveInterval) }
                        loops.addTask {
                            await self.claims.run(
                                store: self.store, state: self.state, streams: self.streams, writes: self.writes,
                                logger: self.logger)
                        }
                        loops.addTask {
                            await self.claims.runReserve(state: self.state, writes: self.writes, logger: self.logger)
                        }
                        loops.addTask { await self.coordination.run(self.nodeWork) }
                        loops.addTask {
                            await self.retention.run(
                                store: self.store, state: self.state, writes: self.writes,
                                coordination: self.coordination, logger: self.logger)
                        }
                        for await _ in self.stopping.stream {}
                        loops.cancelAll()
                    }
                }
            }
        } onCancel: {
            self.stop()
        }
    }

    private var nodeWork: NodeWork {
        NodeWork(
            writes: writes, streams: streams, state: state,
            dispatch: { [dispatcher] in dispatcher.accept(claimed: $0) })
    }

    /// Stops taking work; waiting writers get an error; what waits on external services is
    /// cancelled (those notifications stay processing, for the restart).
    public func stop() {
        stopping.continuation.finish()
        writes.close()
        dispatcher.close()
    }

    // MARK: Retention

    /// Runs retention now, as its loop does (`RetentionKeeper`).
    public func retain(now: Date = Date()) async throws -> RetentionReport {
        try await retention.pass(store: store, state: state, writes: writes, coordination: coordination, now: now)
    }

    // MARK: Reads

    /// The delivery log's epoch, read at start: sequence numbers compare only within it.
    public var epoch: String { loadedEpoch.withLock { $0 } }

    /// What the hub delivered, as the routes read it.
    public var deliveries: DeliveryLog {
        DeliveryLog(store: store, streams: streams, coordination: coordination, epoch: epoch)
    }

    /// Streams open now, for `/metrics`.
    public var openStreams: Int { streams.count }

    /// Ends every open stream and refuses new ones: the server is shutting down, and a
    /// stream would otherwise hold its connection to the end.
    public func closeStreams() { streams.closeAll() }

    /// The configured name of a hub given in any case, or nil when it is not served.
    public func hubName(_ name: String) -> String? { state.hubName(name) }

    /// The installation as every write acknowledged before this call left it (on a shared
    /// store, after catching up with the other nodes).
    public func installation(hub: String, id: String) async throws -> Installation? {
        try await coordination.catchUp()
        return state.installation(hub: hub, id: id)
    }

    /// The registration as every write acknowledged before this call left it.
    public func registration(hub: String, id: String) async throws -> StoredRegistration? {
        try await coordination.catchUp()
        return state.registration(hub: hub, id: id)
    }

    /// Whether this node's tables hold it now (no catch-up: for counting, not for answers).
    public func holdsInstallation(hub: String, id: String) -> Bool { state.installation(hub: hub, id: id) != nil }
    public func holdsRegistration(hub: String, id: String) -> Bool { state.registration(hub: hub, id: id) != nil }

    /// One page of the registration feed (`RegistrationFeed`), as of every acknowledged write.
    public func registrationFeed(hub: String, tag: String?, deviceToken: String?, start: Int, limit: Int) async throws
        -> FeedPage
    {
        try await coordination.catchUp()
        return RegistrationFeed.page(state.tables(hub), tag: tag, deviceToken: deviceToken, start: start, limit: limit)
    }

    public var installationCount: Int { state.installationCount }
    public var registrationCount: Int { state.registrationCount }

    /// How the hub knows a device token (this node's tables).
    /// A device this node does not know yet is looked for again after catching up: a claim
    /// or installation acknowledged by any node (this one included, on a cluster, where
    /// tables follow the change log) is known to the stream opened right after it.
    public func deviceStanding(hub: String, device: String) async throws -> DeviceStanding {
        let standing = state.standing(hub: hub, device: device)
        guard standing == .unknown else { return standing }
        try await coordination.catchUp()
        return state.standing(hub: hub, device: device)
    }

    /// Whether a request about `device` carrying `secret` speaks for its terminal
    /// (`HubState.provesClaim`). A claim without a secret in this node's tables may have been
    /// given one on another node a moment ago: the tables catch up first.
    public func provesClaim(hub: String, device: String, secret: String?) async throws -> Bool {
        let claimedWithoutSecret = state.directory.withLock { directory in
            directory[hub].map { $0.claimedDevices.contains(device.lowercased()) && $0.claimSecrets[device.lowercased()] == nil }
        }
        if claimedWithoutSecret == true { try await coordination.catchUp() }
        return state.provesClaim(hub: hub, device: device, secret: secret)
    }

    /// A test send's outcome as a caller without Manage sees it: the handle of each device of
    /// the built-in push service cut to its first 16 hex digits and `…`, as the CLI prints it
    /// (the token names a terminal); other handles as their services give them.
    public func outcomeWithTerminalHandlesCut(_ outcome: NotificationOutcome, hub: String) -> NotificationOutcome {
        let route = DispatchPlanner.route(.apns, hub: hub, services: dispatcher.planner.services)
        let claimed = state.claimedDevices(hub: hub)
        var shown = outcome
        for r in shown.results.indices {
            let result = shown.results[r]
            let device = result.pnsHandle.lowercased()
            guard result.applicationPlatform == Platform.apns.nativeFormat.rawValue, DeviceToken.isValid(device),
                route.service(for: device, claimedDevices: claimed) == .builtIn
            else { continue }
            shown.results[r].pnsHandle = String(device.prefix(16)) + "…"
        }
        return shown
    }

    /// The devices claimed for the built-in push service.
    public func claimedDevices(hub: String) async throws -> Set<String> {
        try await coordination.catchUp()
        return state.claimedDevices(hub: hub)
    }

    /// A notification the hub accepted, with its state and outcomes.
    public func notification(hub: String, id: String) async throws -> StoredNotification? {
        try await store.notification(hub: hub, id: id)
    }

    /// The explanation of the notification `id` of `hub` (`SendExplainer`), or nil.
    public func explain(hub: String, id: String) async throws -> SendExplanation? {
        guard let n = try await store.notification(hub: hub, id: id) else { return nil }
        try await coordination.catchUp()
        return explainer.explain(n, tables: state.tables(hub))
    }

    /// Plans a notification against the hub's current tables without sending anything.
    public func plan(_ notification: StoredNotification, now: Date = Date()) -> DispatchPlan {
        dispatcher.planner.plan(notification, tables: state.tables(notification.hub), now: now)
    }

    /// What `/healthz` says of the store: whether it answers, and a line naming it.
    public func storeHealth() async -> (healthy: Bool, line: String) { await coordination.storeHealth() }

    // MARK: Writes

    /// Applies a change; returns once it is durable and visible to reads.
    public func write(_ request: WriteRequest) async throws -> WriteResult { try await writes.submit(request) }

    /// Accepts a notification (durably) and queues it for dispatch.
    public func enqueue(_ notification: StoredNotification) async throws {
        _ = try await write(.enqueue(notification))
        metrics.send(format: notification.format.rawValue)
    }

    /// Accepts a test notification, dispatches it, and returns the outcome of its devices.
    public func enqueueTest(_ notification: StoredNotification) async throws -> NotificationOutcome {
        var test = notification
        test.isTest = true
        let promise = dispatcher.expectOutcome(of: test.id)
        do {
            _ = try await write(.enqueue(test))
        } catch {
            dispatcher.forgetOutcome(of: test.id)
            throw error
        }
        metrics.send(format: notification.format.rawValue)
        return await promise.value
    }

    /// Accepts a notification to send at `scheduledFor` (durably); it then waits for its time.
    public func schedule(_ notification: StoredNotification) async throws {
        var scheduled = notification
        scheduled.state = .scheduled
        try await coordination.checkRoomForScheduled(hub: notification.hub)
        _ = try await write(.enqueue(scheduled))
        metrics.send(format: notification.format.rawValue)
    }

    /// Cancels a scheduled notification that has not fired; a `WriteRefusal` (not found)
    /// when it fired, was cancelled, or never was.
    public func cancelScheduled(hub: String, id: String) async throws {
        try await coordination.cancelScheduled(hub: hub, id: id, writes: writes)
    }

    /// A stream opens on `device`: its claim, if it has one, is renewed (a write at most once
    /// an hour per device).
    public func streamOpened(hub: String, device: String) {
        guard state.standing(hub: hub, device: device) == .claimed, claims.renewalDue(hub: hub, device: device) else {
            return
        }
        claims.forget(hub: hub, device: device)
        writes.post(.renewClaim(hub: hub, device: device.lowercased()))
    }

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

    /// `256 MB`, `48 KB`: a budget as people say it.
    static func describeBytes(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(bytes >> 20) MB" : "\(max(1, bytes >> 10)) KB"
    }

    /// Installations, and legacy registrations, one hub may hold.
    public var maximumPerHub: Int { writer.limits.maximumPerHub }
    /// How long a claim of the built-in push service holds unused.
    public var claimLifetime: Duration { claims.lifetime }
}
