import Foundation
import Logging
import NotificationHubs
import Synchronization

/// A hub on a store of its own (SQLite, memory): it numbers deliveries itself from blocks
/// reserved durably in the store, publishes a commit's changes to its tables at once, and
/// keeps scheduled sends in a book that its scheduler fires through the writer.
final class SingleNode: NodeCoordination {
    let store: any HubStore
    let streams: DeviceStreams
    let logger: Logger
    /// The next delivery number and the end of the reserved block (the dispatcher's).
    private let sequence = Mutex<(next: Int64, reserved: Int64)>((1, 0))
    /// Scheduled notifications waiting to fire.
    private let book = Mutex(ScheduleBook())

    /// Delivery numbers reserved at a time.
    static let reservationBlock: Int64 = 10_000
    /// The longest the scheduler sleeps while something is scheduled: the most a send fires
    /// after its time, besides the writer's commit and the dispatch.
    static let scheduleTick: Duration = .milliseconds(200)

    init(store: any HubStore, streams: DeviceStreams, logger: Logger) {
        self.store = store
        self.streams = streams
        self.logger = logger
    }

    /// Alone, the tables are the store's: a batch commits as it was resolved.
    func commit(_ batch: WriteBatch, resolvedAt point: ResolutionPoint) async throws -> CommitOutcome {
        .committed(try await store.apply(batch.mutations))
    }

    /// Alone, this node numbers deliveries before their commit, so their streams have them at
    /// once (`BuiltInPushService.publishBeforeCommit`).
    func handOff(_ deliveries: [Delivery], to streams: DeviceStreams) async -> [PushOutcome] {
        await BuiltInPushService.publishBeforeCommit(deliveries, to: streams)
    }

    func storeHealth() async -> (healthy: Bool, line: String) {
        (true, "store: \(store is SQLiteHubStore ? "sqlite" : "memory")")
    }

    func prepare() async throws {
        let highWater = try await HubEngine.sequenceHighWater(of: store, logger: logger)
        sequence.withLock { $0 = (highWater + 1, highWater) }
    }

    /// The notifications left unfinished, each counted as begun once more (durably, before
    /// any is dispatched: `HubDispatcher.accept(claimed:)` abandons one begun too often).
    func resume() async throws -> [StoredNotification] {
        let scheduled = try await store.scheduledNotifications()
        book.withLock { book in for notification in scheduled { book.add(notification) } }
        var unfinished = try await store.unfinishedNotifications()
        guard !unfinished.isEmpty else { return [] }
        logger.info("resuming \(unfinished.count) undispatched notifications")
        try await store.apply(unfinished.map { .beginDispatch(hub: $0.hub, id: $0.id) })
        for n in unfinished.indices { unfinished[n].dispatchStarts += 1 }
        return unfinished
    }

    /// The scheduler: fires what falls due, through the writer, until cancelled.
    func run(_ node: NodeWork) async {
        while !Task.isCancelled {
            let (due, next) = book.withLock { $0.due(at: Date()) }
            for notification in due {
                do {
                    _ = try await node.writes.submit(.fireScheduled(hub: notification.hub, id: notification.id))
                } catch is WriteRefusal {
                    // Cancelled meanwhile.
                } catch is EngineStopped {
                    return
                } catch {
                    // Not fired (the commit failed): still scheduled in the store, so back in
                    // the book to try again.
                    book.withLock { $0.add(notification) }
                    logger.error("firing the scheduled notification \(notification.id) failed, retrying: \(error)")
                }
            }
            let wait = next.map { min(Duration.seconds(max($0.timeIntervalSinceNow, 0.005)), Self.scheduleTick) }
            try? await Task.sleep(for: wait ?? Self.scheduleTick * 5)
        }
    }

    func committed(changes: ClosedRange<Int64>?, records: [ChangedRecord], publish: () -> Void) { publish() }

    func scheduledHeld(hub: String) -> (count: Int, bytes: Int) {
        book.withLock { ($0.count(hub: hub), $0.bytes(hub: hub)) }
    }

    func scheduled(_ notification: StoredNotification) { book.withLock { $0.add(notification) } }

    func takeScheduled(hub: String, id: String) -> StoredNotification? { book.withLock { $0.remove(hub: hub, id: id) } }

    func commitFailed(unscheduled: [StoredNotification]) {
        book.withLock { book in for notification in unscheduled { book.add(notification) } }
    }

    func cancelScheduled(hub: String, id: String, writes: WriteQueue) async throws {
        _ = try await writes.submit(.cancelScheduled(hub: hub, id: id))
    }

    /// Gives every message a number, reserving a new block durably first when the current
    /// one is used up: numbers handed out before a crash are never reused. Numbers past
    /// 2^62 are refused for good (`StoreFailure`, permanent), never wrapped.
    func number(_ plans: inout [DispatchPlan], logged: [PushServiceKind], stopping: () -> Bool) async throws -> Bool {
        let count = Int64(plans.reduce(0) { total, plan in total + logged.reduce(0) { $0 + (plan.messages[$1]?.count ?? 0) } })
        guard count > 0 else { return true }
        var (next, reserved) = sequence.withLock { ($0.next, $0.reserved) }
        let (last, overflow) = next.addingReportingOverflow(count - 1)
        guard !overflow, StoredRange.sequence.contains(last) else {
            throw StoreFailure(
                description: "its \(count) deliveries would be numbered past 2^62 (the log's numbers reach \(next - 1))",
                permanent: true)
        }
        if last > reserved {
            let target = min(max(last, reserved + Self.reservationBlock), StoredRange.sequence.upperBound)
            var backoff = HubEngine.storeBackoff
            let reservedNow: Void? = try await backoff.retrying {
                try await store.reserveSequence(through: target)
            } failed: { error in
                logger.error("reserving delivery numbers failed, retrying: \(error)")
            } stopping: {
                stopping()
            }
            guard reservedNow != nil else { return false }
            reserved = target
        }
        // Service by service, plan by plan: the order the dispatcher hands them out in, so
        // each device's deliveries are published in increasing order.
        for kind in logged {
            for p in plans.indices {
                guard let count = plans[p].messages[kind]?.count else { continue }
                for m in 0..<count {
                    plans[p].messages[kind]![m].seq = next
                    next += 1
                }
            }
        }
        sequence.withLock { $0 = (next, reserved) }
        return true
    }

    func recorded(published: [Delivery], written: [Delivery]) { streams.markRecorded(published) }

    /// Alone, every number given was given here: below the next one.
    func hasNumbered(through seq: Int64) async throws -> Bool { seq < sequence.withLock { $0.next } }
}
