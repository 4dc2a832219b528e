import Foundation
import Logging
import NotificationHubs
import Synchronization

/// The dispatcher: takes accepted notifications in batches, plans them against the tables
/// (`DispatchPlanner`), has the node number what the delivery log keeps, hands those messages
/// to the built-in push service (its streams see them at once), then writes every delivery
/// and final state in one commit. Messages for external push services (APNs, FCM, Web Push)
/// go out after that commit, in tasks of the dispatcher's own (at most `externalLimit`
/// batches at once): a slow or throttled service never holds back the next batch. A failed
/// commit is retried: nothing is half-recorded, and a crash before a notification's last
/// commit leaves it enqueued or processing, so it is dispatched again at restart (receivers
/// dedupe).
final class HubDispatcher: Sendable {
    struct Job: Sendable {
        let notification: StoredNotification
        let outcome: OutcomePromise?
    }

    /// Batches that may wait on external push services at once; then the dispatcher waits too
    /// (what it holds stays bounded).
    static let externalLimit = 16
    /// Notifications planned at most at once.
    static let batchLimit = 256

    private let jobs = WorkQueue<Job>()
    /// Test sends' outcomes, by notification id, until their dispatch answers them.
    private let waitingOutcomes = Mutex<[String: OutcomePromise]>([:])
    private let external = StreamLimit(HubDispatcher.externalLimit)
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

    init(
        state: HubState, store: any HubStore, coordination: any NodeCoordination, planner: DispatchPlanner,
        writes: WriteQueue, metrics: HubMetrics, logger: Logger
    ) {
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

    /// Takes no more; test sends waiting get no outcome.
    func close() {
        Self.unanswered(jobs.close())
    }

    /// Dispatches batches until the queue closes; then ends what waits on external services
    /// (cancelled: their notifications stay processing, to go out at restart).
    func run() async {
        await withDiscardingTaskGroup { group in
            for await _ in jobs.wakeups {
                while true {
                    let batch = jobs.take(limit: Self.batchLimit)
                    if batch.isEmpty { break }
                    if let later = await dispatch(batch) {
                        await external.acquire()
                        group.addTask {
                            await self.finishExternally(later.jobs, later.plans)
                            self.external.release()
                        }
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
