import Foundation
import Logging
import NotificationHubs
import Synchronization

/// The dispatcher: takes accepted notifications in batches, plans them against the tables
/// (`DispatchPlanner`), has the node number what the delivery log keeps, hands those messages
/// to the built-in push service (its streams see them at once), then writes every delivery
/// and final state in one commit. Messages for external push services (APNs, FCM, Web Push)
/// go out after that commit, in tasks of the dispatcher's own (at most `externalLimit`
/// batches at once, the rest waiting their turn in a queue): a slow or throttled service
/// never holds back the next batch, and so never the terminals' news. A failed
/// commit is retried: nothing is half-recorded, and a crash before a notification's last
/// commit leaves it enqueued or processing, so it is dispatched again at restart (receivers
/// dedupe).
final class HubDispatcher: Sendable {
    struct Job: Sendable {
        let notification: StoredNotification
        let outcome: OutcomePromise?
    }

    /// Batches waiting on external push services at once; more wait in `external` (a batch
    /// waiting only for retries holds one sleeping task and its plans).
    static let externalLimit = 64
    /// Notifications planned at most at once.
    static let batchLimit = 256

    private let jobs = WorkQueue<Job>()
    /// Batches whose external services' messages are still to go out.
    private let external = WorkQueue<(jobs: [Job], plans: [DispatchPlan])>()
    /// Test sends' outcomes, by notification id, until their dispatch answers them.
    private let waitingOutcomes = Mutex<[String: OutcomePromise]>([:])
    let state: HubState
    let store: any HubStore
    let coordination: any NodeCoordination
    let planner: DispatchPlanner
    /// The services in their kinds' order (the built-in one first): the order messages are
    /// numbered and handed out in.
    let services: [any PushService]
    let writes: WriteQueue
    let metrics: HubMetrics
    let logger: Logger

    /// What the log grew by, for retention.
    let logGrowth: LogGrowth

    init(
        state: HubState, store: any HubStore, coordination: any NodeCoordination, planner: DispatchPlanner,
        writes: WriteQueue, metrics: HubMetrics, logGrowth: LogGrowth, logger: Logger
    ) {
        self.logGrowth = logGrowth
        self.state = state
        self.store = store
        self.coordination = coordination
        self.planner = planner
        self.services = planner.services.values.sorted { $0.kind < $1.kind }
        self.writes = writes
        self.metrics = metrics
        self.logger = logger
    }

    // MARK: Jobs

    /// A test send's outcome, once it is dispatched; register before its write.
    func expectOutcome(of id: String) -> OutcomePromise {
        let promise = OutcomePromise()
        waitingOutcomes.withLock { $0[id] = promise }
        return promise
    }

    func forgetOutcome(of id: String) { _ = waitingOutcomes.withLock { $0.removeValue(forKey: id) } }

    /// Queues a durable notification; a test send takes the outcome waiting for it.
    func accept(_ notification: StoredNotification) {
        let waiting = notification.isTest ? waitingOutcomes.withLock { $0.removeValue(forKey: notification.id) } : nil
        if !jobs.push(Job(notification: notification, outcome: waiting)) {
            waiting?.fulfil(NotificationOutcome(success: 0, failure: 0, results: []))
        }
    }

    /// Queues notifications a node takes over (its own at restart, another's, scheduled ones due).
    func accept(claimed notifications: [StoredNotification]) {
        for notification in notifications { jobs.push(Job(notification: notification, outcome: nil)) }
    }

    /// Whether `close` was called: retries of the store end, so that a shutdown is never held
    /// by a store that keeps failing (what was not recorded is dispatched again at restart).
    var isStopping: Bool { jobs.isClosed }

    /// Takes no more; test sends waiting get no outcome.
    func close() {
        Self.unanswered(jobs.close())
        for batch in external.close() { Self.unanswered(batch.jobs) }
    }

    /// Dispatches batches until the queue closes, and meanwhile sends what waits on external
    /// services; then ends that (cancelled: those notifications stay processing, to go out at
    /// restart).
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.runExternal() }
            for await _ in jobs.wakeups {
                while true {
                    let batch = jobs.take(limit: Self.batchLimit)
                    if batch.isEmpty { break }
                    if let later = await dispatch(batch), !external.push(later) { Self.unanswered(later.jobs) }
                }
            }
        }
    }

    /// Sends the external services' share of batches, `externalLimit` batches at once, until
    /// the dispatcher closes.
    private func runExternal() async {
        let slots = StreamLimit(Self.externalLimit)
        await withDiscardingTaskGroup { group in
            for await _ in external.wakeups {
                while true {
                    guard let later = external.take(limit: 1).first else { break }
                    await slots.acquire()
                    group.addTask {
                        await self.finishExternally(later.jobs, later.plans)
                        slots.release()
                    }
                }
            }
            group.cancelAll()
        }
    }

    /// Answers test sends the hub stopped before it finished: no outcome (never left waiting).
    static func unanswered(_ jobs: [Job]) {
        for job in jobs { job.outcome?.fulfil(NotificationOutcome(success: 0, failure: 0, results: [])) }
    }
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
