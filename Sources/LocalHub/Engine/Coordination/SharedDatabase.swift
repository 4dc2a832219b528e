import Foundation
import Logging
import NotificationHubs
import Synchronization

/// One node of several on a shared store (`SharedHubStore`): it follows what the others
/// commit — the change log into its tables, the delivery feed into its device streams, and
/// expired claims into its dispatcher — and lets the store number deliveries at commit.
/// Reads on this node catch up with the change log first, so they see every write
/// acknowledged on any node; writes are checked at their commit against what was committed
/// after the position they were resolved at (`Resolution`), or catch up first.
///
/// Its own commits it applies as it makes them, never reading them back: the writer's
/// changes go into the tables at once (`ChangeCursor.take`), and each record they changed is
/// noted with the commit's last number while the log is unread up to it, so that no change
/// read from the log at that number or before (another node's, read as the row was before
/// this commit, or this commit's own) is applied over it, nor decoded. The dispatcher's
/// deliveries go to the streams at once when their numbers come next (`Cursor.take`), else
/// they are read from the feed with the other nodes'.
///
/// The change log is pruned behind its readers: each node notes how far it has read every
/// `positionInterval`, and `retain` removes what every node noted within `liveWindow` has
/// read. A node that was not heard from for that long (cut off from the database, paused)
/// holds nothing back; when it comes back behind the point pruned through, it reloads its
/// tables in full before it answers anything that catches up.
final class SharedDatabase: NodeCoordination {
    let store: any SharedHubStore
    private let state: HubState
    private let streams: DeviceStreams
    /// Catches the tables up with the change log: shared by every caller waiting at once.
    private let changes: Refresher
    private let changeCursor = ChangeCursor()
    private let feedCursor = Cursor()
    private let feedWake: AsyncStream<Void>.Continuation
    private let feedWakes: AsyncStream<Void>
    private let logger: Logger
    /// Between polls when no wake-up came: the most a lost wake-up delays anything.
    static let pollInterval: Duration = .seconds(1)
    /// Rows read from the change log or the delivery feed at a time.
    static let pageSize = 2000
    /// How often a node notes how far it has read the change log (one small write).
    static let positionInterval: Duration = .seconds(15)
    /// How recently a node must have noted its position for the change log to be kept for
    /// it: twenty missed notes. Longer than any pause of a node that still works (a database
    /// failover, a busy machine), short enough that a node that died holds back at most a
    /// few minutes of writes; one that comes back later reloads its tables, as at a start.
    static let liveWindow: TimeInterval = 300

    init(store: any SharedHubStore, state: HubState, streams: DeviceStreams, metrics: HubMetrics, logger: Logger) {
        self.store = store
        self.state = state
        self.streams = streams
        self.logger = logger
        let cursor = changeCursor
        changes = Refresher {
            while true {
                let page: [StoredChange]
                do {
                    page = try await store.changes(after: cursor.position, limit: Self.pageSize, applied: cursor.applied)
                } catch let pruned as ChangeLogPruned {
                    try await Self.reload(store: store, state: state, cursor: cursor, metrics: metrics, logger: logger, pruned)
                    continue
                }
                guard let last = page.last else { return }
                let quarantined = page.filter(\.quarantined).count
                if quarantined > 0 { metrics.addQuarantined(quarantined) }
                cursor.advance(page, through: last.seq) { state.apply($0) }
                if page.count < Self.pageSize { return }
            }
        }
        (feedWakes, feedWake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Reloads the tables from the store, for a node that fell behind the pruned change log,
    /// and follows from the log's head read before the load (as at a start).
    private static func reload(
        store: any SharedHubStore, state: HubState, cursor: ChangeCursor, metrics: HubMetrics, logger: Logger,
        _ pruned: ChangeLogPruned
    ) async throws {
        let head = try await store.changeHead()
        let snapshot = try await store.load()
        HubEngine.report(quarantineOf: snapshot, metrics: metrics, logger: logger)
        state.reload(snapshot)
        cursor.position = head
        logger.warning(
            "this node had read the change log through \(pruned.position), but it was pruned through \(pruned.prunedThrough) while the node was not heard from (over \(Int(liveWindow)) s): reloaded its tables in full (\(snapshot.installations.count) installations, \(snapshot.registrations.count) registrations)"
        )
        try? await store.noteChangePosition(head, now: Date())
    }

    func catchUp() async throws { try await changes.refresh() }

    /// Where this node's tables follow the change log: every change up to it is in them.
    func resolutionPoint() -> ResolutionPoint { .changeLog(position: changeCursor.position) }

    /// The tables may be behind the change log: a batch that wrote nothing, answered a write
    /// without writing or refused one is resolved again after catching up (what it answered
    /// from tables behind would not be checked at the commit).
    func mustResolveAgain(_ batch: WriteBatch, refusing: Bool) -> Bool {
        batch.mutations.isEmpty || batch.answeredUnwritten || refusing
    }

    /// Commits only if nothing committed after the point the batch was resolved at would have
    /// resolved it otherwise.
    func commit(_ batch: WriteBatch, resolvedAt point: ResolutionPoint) async throws -> CommitOutcome {
        guard case .changeLog(let position) = point else { return .committed(try await store.apply(batch.mutations)) }
        return try await store.apply(
            batch.mutations, resolvedAt: Resolution(position: position, room: batch.room, reads: batch.reads))
    }

    /// The store numbers these deliveries at the dispatch's commit, in the order every node
    /// sees them, and writes them to the delivery log, whose feed brings them to every node's
    /// streams (this node's at once, `recorded`). So they are not published before it: each is
    /// kept for the commit, which writes it with its outcome or, failing, neither.
    func handOff(_ deliveries: [Delivery], to streams: DeviceStreams) async -> [PushOutcome] {
        Array(repeating: .delivered, count: deliveries.count)
    }

    func storeHealth() async -> (healthy: Bool, line: String) {
        do {
            _ = try await store.changeHead()
            return (true, "store: postgres, node \(store.node)")
        } catch {
            // /healthz answers anyone: the kind of problem, never the server, role or database,
            // which the node's log names.
            let kind = (error as? StoreUnavailable)?.kind ?? (error as? DatabaseProblem)?.kind
            let said =
                switch kind {
                case .unreachable: "the database cannot be reached"
                case .authentication: "the database refuses this node's login"
                case .unusable: "the database cannot be used"
                case nil: "the database does not answer"
                }
            return (false, "store: postgres unreachable (\(said); the node's log says why), node \(store.node)")
        }
    }

    /// Follows from the change log's head read before the tables are loaded (changes after it
    /// are read again, which sets the same rows), and from the last delivery (streams read
    /// older ones from the store when they open).
    func prepare() async throws {
        changeCursor.position = try await store.changeHead()
        feedCursor.position = try await HubEngine.sequenceHighWater(of: store, logger: logger)
        try await store.noteChangePosition(changeCursor.position, now: Date())
    }

    func resume() async throws -> [StoredNotification] {
        let own = try await store.takeBackClaims(now: Date())
        if !own.isEmpty { logger.info("resuming \(own.count) notifications this node had accepted before it stopped") }
        return own
    }

    /// The delivery feed into the streams, wake-ups and polls into catching up, and claims
    /// of notifications other nodes left or scheduled ones now due into the dispatcher.
    func run(_ node: NodeWork) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.followFeed() }
            group.addTask { await self.followWakeups() }
            group.addTask { await self.poll() }
            group.addTask { await self.takeClaims(dispatch: node.dispatch) }
            group.addTask { await self.notePositions() }
            group.addTask { await self.copyEarlierLog() }
            await group.waitForAll()
        }
        feedWake.finish()
    }

    /// Copies the delivery log's rows of an earlier form into the current one, a batch at a
    /// time while the node serves (they are read from both until then), and stops once none
    /// is left; a failure is tried again a while later. Several nodes may copy at once: each
    /// batch is moved by one of them.
    private func copyEarlierLog() async {
        let started = ContinuousClock.now
        var moved = 0
        while !Task.isCancelled {
            do {
                let count = try await store.copyEarlierDeliveries(limit: Self.copyBatch)
                moved += count
                if count == 0 { break }
            } catch {
                logger.warning("copying the delivery log into its compact form failed, trying again in a minute: \(error)")
                try? await Task.sleep(for: .seconds(60))
            }
        }
        if moved > 0 {
            let seconds = (ContinuousClock.now - started).components.seconds
            logger.info("copied \(moved) deliveries into the compact delivery log in \(seconds) s")
        }
    }

    /// Rows of the delivery log's earlier form copied in one transaction.
    static let copyBatch = 5000

    private func notePositions() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.positionInterval)
            if Task.isCancelled { return }
            do {
                try await store.noteChangePosition(changeCursor.position, now: Date())
            } catch {
                logger.debug("noting how far this node has read the change log failed: \(error)")
            }
        }
    }

    /// Notes this node's position, then prunes the change log behind every live node.
    @discardableResult
    func retain(now: Date) async -> Int {
        do {
            try await store.noteChangePosition(changeCursor.position, now: now)
            let removed = try await store.pruneChanges(now: now, liveWindow: Self.liveWindow)
            if removed > 0 { logger.debug("pruned \(removed) changes from the change log") }
            return removed
        } catch {
            logger.warning("pruning the change log failed: \(error)")
            return 0
        }
    }

    private func followFeed() async {
        for await _ in feedWakes {
            if Task.isCancelled { return }
            do {
                while true {
                    let page = try await store.deliveryFeed(after: feedCursor.position, limit: Self.pageSize)
                    guard let through = page.through else { break }
                    feedCursor.advance(page.deliveries, through: through, number: \.seq) { streams.publish($0) }
                    if page.rowsRead < Self.pageSize { break }
                }
            } catch {
                // The next poll tries again from the same number: nothing is skipped.
                logger.warning("reading the delivery feed failed: \(error)")
            }
        }
    }

    private func followWakeups() async {
        for await wakeup in store.wakeups() {
            switch wakeup {
            case .changes: changes.poke()
            case .deliveries: feedWake.yield()
            case .reconnected:
                changes.poke()
                feedWake.yield()
            }
        }
    }

    private func poll() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.pollInterval)
            changes.poke()
            feedWake.yield()
        }
        // Ends the feed's loop too.
        feedWake.finish()
    }

    private func takeClaims(dispatch: @Sendable ([StoredNotification]) -> Void) async {
        while !Task.isCancelled {
            do {
                let claimed = try await store.claimNotifications(now: Date(), limit: 256)
                if !claimed.isEmpty {
                    logger.info("took over \(claimed.count) notifications (expired claims or scheduled sends now due)")
                    dispatch(claimed)
                }
            } catch {
                logger.warning("renewing and taking claims failed: \(error)")
            }
            try? await Task.sleep(for: Self.pollInterval)
        }
    }

    /// Sets the commit's changes in the tables at once (`ChangeCursor.take`); when other
    /// nodes' changes numbered before them are unread, a read of the log is started now, as
    /// no wake-up comes for a node's own commit.
    func committed(changes numbers: ClosedRange<Int64>?, records: [ChangedRecord], publish: () -> Void) {
        guard let numbers else { return }
        if !changeCursor.take(numbers, records: records, apply: publish) { changes.poke() }
    }

    func scheduledHeld(hub: String) -> (count: Int, bytes: Int) { (0, 0) }
    func scheduled(_ notification: StoredNotification) {}
    func takeScheduled(hub: String, id: String) -> StoredNotification? { nil }
    func commitFailed(unscheduled: [StoredNotification]) {}

    func checkRoomForScheduled(hub: String) async throws {
        let waiting = try await store.scheduledCount(hub: hub)
        guard waiting < HubWriter.maximumScheduled else {
            throw WriteRefusal(
                reason: .quotaExceeded,
                detail: "the hub holds \(waiting) scheduled sends, the most it may; cancel some or wait for them to go")
        }
    }

    func cancelScheduled(hub: String, id: String, writes: WriteQueue) async throws {
        guard try await store.cancelScheduled(hub: hub, id: id, at: Date()) else {
            throw WriteRefusal(
                reason: .notFound,
                detail: "No scheduled notification '\(id)' is waiting: it was sent, cancelled, or never scheduled")
        }
    }

    /// The store numbers deliveries as it commits them (`seq` 0 until then).
    func number(_ plans: inout [DispatchPlan], logged: [PushServiceKind], stopping: () -> Bool) async throws -> Bool {
        true
    }

    /// Numbers this node has read from the feed were given; one past them may have been, by
    /// another node a moment ago: the store says.
    func hasNumbered(through seq: Int64) async throws -> Bool {
        if seq <= feedCursor.position { return true }
        do {
            return seq <= (try await store.sequenceHighWater())
        } catch  where StoreFailure.isPermanent(error) {
            return true
        }
    }

    /// The deliveries the store wrote go to this node's streams at once when their numbers
    /// come next in the feed (the store numbered them under its lock, so none of another
    /// node's lies between); else the streams read the feed now.
    func recorded(published: [Delivery], written: [Delivery]) {
        guard let first = written.first?.seq, let last = written.last?.seq else { return }
        if !feedCursor.take(first...last, apply: { streams.publish(written) }) { feedWake.yield() }
    }
}
