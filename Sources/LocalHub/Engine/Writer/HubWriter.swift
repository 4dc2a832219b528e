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
    /// body in memory until it goes (on `main`, 2,000 of 60 KB took 126 MB).
    static let maximumScheduled = 10_000
    static let maximumScheduledBytes = 16 << 20
    /// Writes committed at most at once.
    static let batchLimit = 2048

    let writes: WriteQueue
    private let state: HubState
    private let store: any HubStore
    private let coordination: any NodeCoordination
    private let dispatcher: HubDispatcher
    private let claims: ClaimKeeper
    let limits: Limits
    private let logger: Logger

    init(
        writes: WriteQueue, state: HubState, store: any HubStore, coordination: any NodeCoordination,
        dispatcher: HubDispatcher, claims: ClaimKeeper, limits: Limits, logger: Logger
    ) {
        self.writes = writes
        self.state = state
        self.store = store
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
    private func commit(_ pending: [WriteQueue.Pending]) async {
        if await committedAtPosition(pending) { return }
        do {
            // On a shared store, checked against what every node committed before (a batch of
            // sends alone checks nothing there).
            if pending.contains(where: \.request.readsTables) { try await coordination.catchUp() }
        } catch {
            for write in pending { write.continuation.resume(throwing: error) }
            return
        }
        var batch = WriteBatch(state: state, limits: limits, coordination: coordination, claims: claims, now: Date())
        let results = pending.map { batch.resolve($0.request) }
        let numbers: ClosedRange<Int64>?
        do {
            numbers = try await store.apply(batch.mutations)
        } catch {
            logger.error("commit of \(batch.mutations.count) changes failed: \(error)")
            // Scheduled sends this batch took out of the book are still scheduled in the store.
            coordination.commitFailed(unscheduled: batch.unscheduled)
            for write in pending { write.continuation.resume(throwing: error) }
            return
        }
        finish(pending, batch, results, numbers: numbers)
    }

    /// A batch of installation PUTs on a shared store whose other nodes have been quiet:
    /// resolved without catching up first, and committed only if nothing was committed
    /// anywhere since the tables' position. True when it was answered; false to go the usual
    /// way (the store moved on, or a PUT was refused against tables that may be behind).
    private func committedAtPosition(_ pending: [WriteQueue.Pending]) async -> Bool {
        guard pending.allSatisfy(\.request.isInstallationPut), let position = coordination.position() else { return false }
        var batch = WriteBatch(state: state, limits: limits, coordination: coordination, claims: claims, now: Date())
        let results = pending.map { batch.resolve($0.request) }
        let installations = batch.mutations.compactMap { mutation -> (hub: String, installation: Installation)? in
            if case .upsertInstallation(let hub, let installation) = mutation { return (hub, installation) }
            return nil
        }
        guard !installations.isEmpty, installations.count == batch.mutations.count,
            results.allSatisfy({ if case .success = $0 { true } else { false } })
        else { return false }
        do {
            guard case .committed(let numbers) = try await coordination.commit(installations, at: position) else {
                return false
            }
            finish(pending, batch, results, numbers: numbers)
        } catch {
            logger.error("commit of \(installations.count) installations failed: \(error)")
            for write in pending { write.continuation.resume(throwing: error) }
        }
        return true
    }

    /// After the commit: the tables, the notifications accepted, and each writer's answer.
    private func finish(
        _ pending: [WriteQueue.Pending], _ batch: WriteBatch, _ results: [WriteResolution], numbers: ClosedRange<Int64>?
    ) {
        coordination.committed(changes: numbers) { batch.publish() }
        for notification in batch.enqueued {
            if notification.state == .scheduled {
                coordination.scheduled(notification)
            } else {
                dispatcher.accept(notification)
            }
        }
        for (write, result) in zip(pending, results) { write.continuation.resume(with: result.mapError { $0 as Error }) }
    }
}
