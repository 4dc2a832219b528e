import Foundation
import Logging
import NotificationHubs

/// The writer: group commit of installation, registration, claim and notification writes.
/// It takes every write waiting at once (`WriteQueue`), resolves the batch (`WriteBatch`),
/// commits its mutations in one transaction, then publishes them to the tables (as the node's
/// coordination says), hands accepted notifications on, and answers each writer.
final class HubWriter: Sendable {
    /// What a hub may hold.
    struct Limits: Sendable {
        /// Installations, and legacy registrations, one hub may hold; also its claims.
        var maximumPerHub: Int
        /// Bytes their strings may take in all, per hub (`Installation.storedSize`).
        var maximumBytesPerHub: Int
        /// The expiry given to an installation or registration that names none.
        var installationTTL: TimeInterval? = nil
    }

    /// Scheduled sends one hub may hold waiting, and the bytes they may take: each keeps its
    /// body in memory until it goes.
    static let maximumScheduled = 10_000
    static let maximumScheduledBytes = 16 << 20
    /// Writes committed at most at once.
    static let batchLimit = 2048
    /// Times a batch is resolved and committed when each commit meets a change made elsewhere
    /// since it was resolved; then each of its writes is, alone, as many times, and one that
    /// still meets changes is refused as a conflict (only writes of one record on several
    /// nodes at once without pause, or into a hub at its limits while others write, come near).
    static let attempts = 8
    /// The most bytes a change made on another node is taken to add to a hub, in the room a
    /// batch counts (`Resolution.room`): above any record a node accepts (a body is at most
    /// `LocalHubConfiguration.maximumBodyBytes`, 64 KiB, which `hub serve` does not change).
    static let largestChangeBytes = 1 << 20

    let writes: WriteQueue
    private let state: HubState
    private let coordination: any NodeCoordination
    private let dispatcher: HubDispatcher
    private let claims: ClaimKeeper
    let limits: Limits
    private let logger: Logger

    init(
        writes: WriteQueue, state: HubState, coordination: any NodeCoordination,
        dispatcher: HubDispatcher, claims: ClaimKeeper, limits: Limits, logger: Logger
    ) {
        self.writes = writes
        self.state = state
        self.coordination = coordination
        self.dispatcher = dispatcher
        self.claims = claims
        self.limits = limits
        self.logger = logger
    }

    /// Commits batches until the queue closes.
    func run() async {
        for await _ in writes.queue.wakeups {
            while true {
                let batch = writes.queue.take(limit: Self.batchLimit)
                if batch.isEmpty { break }
                await commit(batch)
            }
        }
    }

    /// Resolves a batch against the tables plus the batch's own earlier writes, commits its
    /// mutations in one transaction, then publishes them and answers each writer.
    ///
    /// The batch is committed at the point the coordination says it was resolved at
    /// (`ResolutionPoint`: on a shared store, where the tables follow the change log; the
    /// commit is checked against what was committed anywhere after it). A batch of writes that
    /// read only what they name is resolved without catching up first; it is resolved again
    /// after catching up when the coordination says so (`mustResolveAgain`) or the check at
    /// the commit finds something that would have resolved it otherwise. Other batches catch
    /// up first.
    private func commit(_ pending: [WriteQueue.Pending]) async {
        var catchUp = !pending.allSatisfy(\.request.readsOnlyWhatItNames)
        for attempt in 1...Self.attempts {
            do {
                if catchUp { try await coordination.catchUp() }
                let point = coordination.resolutionPoint()
                var batch = WriteBatch(state: state, limits: limits, coordination: coordination, claims: claims, now: Date())
                let results = pending.map { batch.resolve($0.request) }
                if !catchUp, coordination.mustResolveAgain(batch, refusing: results.contains(where: \.isFailure)) {
                    batch.uncommitted()
                    catchUp = true
                    continue
                }
                let outcome: CommitOutcome
                do {
                    outcome = try await coordination.commit(batch, resolvedAt: point)
                } catch {
                    logger.error("commit of \(batch.mutations.count) changes failed: \(error)")
                    // Scheduled sends this batch took out of the book are still scheduled in the store.
                    coordination.commitFailed(unscheduled: batch.unscheduled)
                    batch.uncommitted()
                    throw error
                }
                guard case .committed(let numbers) = outcome else {
                    batch.uncommitted()
                    logger.debug("a batch of \(pending.count) writes met a change made elsewhere since (attempt \(attempt))")
                    catchUp = true
                    continue
                }
                finish(pending, batch, results, numbers: numbers)
            } catch {
                for write in pending { write.continuation?.resume(throwing: error) }
            }
            return
        }
        // Each write alone, so that only one that keeps meeting changes is refused.
        if pending.count > 1 {
            for write in pending { await commit([write]) }
            return
        }
        let refusal = WriteRefusal(
            reason: .conflict,
            detail: "what this changes was changed on another node at the same moment, \(Self.attempts) times; try again")
        for write in pending { write.continuation?.resume(throwing: refusal) }
    }

    /// After the commit: the tables, the notifications accepted, and each writer's answer.
    private func finish(
        _ pending: [WriteQueue.Pending], _ batch: WriteBatch, _ results: [WriteResolution], numbers: ClosedRange<Int64>?
    ) {
        coordination.committed(changes: numbers, records: batch.published.map(\.record)) { batch.publish() }
        for notification in batch.enqueued {
            if notification.state == .scheduled {
                coordination.scheduled(notification)
            } else {
                dispatcher.accept(notification)
            }
        }
        for (write, result) in zip(pending, results) { write.continuation?.resume(with: result.mapError { $0 as Error }) }
    }
}
