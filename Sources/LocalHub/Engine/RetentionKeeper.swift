import Foundation
import Logging
import NotificationHubs
import Synchronization

/// What one pass of retention removed.
public struct RetentionReport: Sendable, Equatable {
    public var pruned = PruneReport()
    /// Installations and registrations removed because their expiry had passed.
    public var expired = 0
    /// Change-log rows every live node had read, removed (several nodes on PostgreSQL).
    public var changes = 0
    public init() {}
}

/// About how many bytes the delivery log grew by since retention last ran: the dispatcher
/// adds what it records, and retention runs early once that is a good part of the cap, so
/// no burst of sends keeps the log over its cap until the next pass.
final class LogGrowth: Sendable {
    private let bytes = Mutex<Int64>(0)
    /// Retention runs early once the log grew by this much.
    let threshold: Int64

    init(threshold: Int64) { self.threshold = max(1, threshold) }

    /// Notes deliveries recorded: `count` of them, with `payloadBytes` of distinct payloads.
    func add(count: Int, payloadBytes: Int) {
        bytes.withLock { $0 += Int64(count) * deliveryRowBytes + Int64(payloadBytes) }
    }

    var isDue: Bool { bytes.withLock { $0 >= threshold } }

    /// Starts counting again (retention just ran).
    func reset() { bytes.withLock { $0 = 0 } }
}

/// Retention: removes deliveries and ended notifications older than the policy's age, the
/// oldest deliveries while the log is over its byte cap (each device's loss kept as its gap,
/// told when it comes back), installations and registrations whose expiry passed, and what
/// the node coordination keeps for other nodes. Runs every `RetentionPolicy.interval`, and
/// early when the log grew fast.
final class RetentionKeeper: Sendable {
    let policy: RetentionPolicy
    let growth: LogGrowth
    /// Passes `run` has finished (what a test waits for before it times passes of its own).
    let loopPasses = Atomic<Int>(0)
    /// Expired records removed at most in one pass (the next pass takes the rest).
    static let expiredPerPass = 10_000

    init(policy: RetentionPolicy) {
        self.policy = policy
        growth = LogGrowth(threshold: policy.maximumLogBytes / 8)
    }

    /// What a pass leaves the log at most: its cap less the growth that calls for the next
    /// pass, so that the log stays within its cap between passes. (Cut to the cap itself, a
    /// log that grew by less than that after a pass stayed over its cap until the interval.)
    var logBytesAfterPass: Int64 { max(1, policy.maximumLogBytes - growth.threshold) }

    /// One pass at `now`.
    func pass(
        store: any HubStore, state: HubState, writes: WriteQueue, coordination: any NodeCoordination, now: Date = Date()
    ) async throws -> RetentionReport {
        growth.reset()
        var report = RetentionReport()
        report.pruned = try await store.prune(
            before: now.addingTimeInterval(-policy.age), maximumLogBytes: logBytesAfterPass)
        for record in state.expired(at: now, limit: Self.expiredPerPass) {
            _ = try await writes.submit(.removeExpired(record))
            report.expired += 1
        }
        report.changes = await coordination.retain(now: now)
        return report
    }

    /// Passes until cancelled: every interval, or early when the log grew fast.
    func run(
        store: any HubStore, state: HubState, writes: WriteQueue, coordination: any NodeCoordination, logger: Logger
    ) async {
        while !Task.isCancelled {
            do {
                let report = try await pass(store: store, state: state, writes: writes, coordination: coordination)
                Self.log(report, policy: policy, logger: logger)
            } catch {
                if Task.isCancelled { return }
                logger.warning("retention could not run, trying again later: \(error)")
            }
            loopPasses.add(1, ordering: .relaxed)
            // The interval, or the log growing fast, whichever comes first.
            let deadline = ContinuousClock.now + policy.interval
            while !Task.isCancelled, !growth.isDue, ContinuousClock.now < deadline {
                try? await Task.sleep(for: min(.seconds(1), deadline - .now))
            }
        }
    }

    static func log(_ report: RetentionReport, policy: RetentionPolicy, logger: Logger) {
        let p = report.pruned
        guard p.deliveries + p.notifications + report.expired > 0 else { return }
        logger.info(
            "retention (\(ClaimKeeper.describe(.seconds(policy.age))), \(policy.maximumLogBytes >> 20) MB of log): removed \(p.deliveries) deliveries to \(p.devices) devices, \(p.notifications) notifications, \(report.expired) expired installations or registrations"
        )
    }
}
