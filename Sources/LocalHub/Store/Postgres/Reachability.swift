import Foundation
import Synchronization

/// What asks the server whether it answers at all, outside the pool (`PostgresProbe`).
protocol ReachabilityProbe: Sendable {
    /// Asks the server something; throws when it gets no answer. Cancelled after `probeTimeout`.
    func ask() async throws
    /// Lets go of what it holds.
    func close()
}

/// Whether the database answers, and how long an operation may wait for it.
///
/// While the database is down, the client's pool keeps an operation waiting for a connection
/// as long as it takes; a request to the hub must instead get its 503 soon. But a slow
/// database is not a down one, and an operation that waits proves nothing: it may be held
/// by a lock, a full pool, a busy disk or a busy machine. So an operation fails as
/// unavailable only once nothing has answered for `silence`: no operation of this process on
/// that server finished, and no probe got an answer. A probe asks the server `SELECT 1` on
/// a connection of its own, outside the pool (`ReachabilityProbe`); one runs once an
/// operation has waited `probeAfter` without an answer (one at a time, at most one a
/// second, per server).
///
/// Once the database is found unreachable, operations that start wait only `impatience`,
/// so that requests get their 503 at once; each also starts a probe. The first probe that
/// answers within `probeTimeout` makes it reachable again, as does any operation that
/// succeeds: a node whose database is slow recovers by itself, even when no operation can
/// finish within `impatience`. An operation already waiting when the database is found
/// unreachable keeps its `silence`. None waits more than `longest`.
final class Reachability: Sendable {
    /// What is known of one server, shared by every store of the process on it.
    private final class Liveness: Sendable {
        let reachable = Atomic<Bool>(true)
        /// When it last answered (`DispatchTime` nanoseconds): an operation or a probe.
        let lastAnswer = Atomic<UInt64>(Reachability.now)
        /// The probe under way, and when the last one started.
        let probe = Mutex<(running: Task<Void, Never>?, started: UInt64)>((nil, 0))

        func answered() {
            lastAnswer.store(Reachability.now, ordering: .relaxed)
            reachable.store(true, ordering: .relaxed)
        }
    }

    private static let servers = Mutex<[String: Liveness]>([:])
    private let liveness: Liveness
    private let prober: any ReachabilityProbe

    /// - Parameter server: `host:port`.
    init(server: String, probe: any ReachabilityProbe) {
        liveness = Self.servers.withLock { servers in
            if let known = servers[server] { return known }
            let made = Liveness()
            servers[server] = made
            return made
        }
        prober = probe
    }

    deinit { prober.close() }

    /// Lets go of the probe's connection (the store shuts down).
    func shutdown() { prober.close() }

    static let silence = 5.0
    static let impatience = 1.0
    static let longest = 60.0
    static let probeAfter = 1.0
    /// How long a probe may take: its word comes before an operation's `silence` is over.
    static let probeTimeout = silence - probeAfter

    static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    static func nanoseconds(_ seconds: Double) -> UInt64 { UInt64(seconds * 1e9) }

    /// The caller's continuation, resumed once: by the operation or by its deadline.
    private final class Outcome<T: Sendable>: Sendable {
        let waiting = Mutex<CheckedContinuation<T, Error>?>(nil)
        var settled: Bool { waiting.withLock { $0 == nil } }
    }

    /// Runs `body` in a task of its own, which the caller stops waiting for at its deadline.
    /// Not a task group that closes the body's connection to end it: postgres-nio drops a
    /// statement written to a connection whose channel has closed and never answers it (the
    /// pool can lease out a connection closed a moment before, and a transaction sends its
    /// ROLLBACK after the failure the close caused), so the group would wait for ever.
    func withDeadline<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let started = Self.now
        // Started while the database was found unreachable: the 503 comes soon.
        let patient = liveness.reachable.load(ordering: .relaxed)
        let outcome = Outcome<T>()
        let liveness = liveness
        return try await withCheckedThrowingContinuation { continuation in
            outcome.waiting.withLock { $0 = continuation }
            let work = Task {
                let result: Result<T, Error>
                do {
                    result = .success(try await body())
                } catch {
                    result = .failure(error)
                }
                switch result {
                case .success: liveness.answered()
                // Refused, or not what was expected: the database answered all the same.
                case .failure(let error) where error is StoreFailure: liveness.answered()
                case .failure: break
                }
                outcome.waiting.withLock { $0.take() }?.resume(with: result)
            }
            Task {
                if !patient { self.probe() }
                let failure = await self.watch(started: started, patient: patient, until: { outcome.settled })
                guard let failure, let waiting = outcome.waiting.withLock({ $0.take() }) else { return }
                work.cancel()
                waiting.resume(throwing: failure)
            }
        }
    }

    /// Waits while the operation started at `started` runs, probing the server while nothing
    /// answers; returns why it must fail, or nil once `settled`.
    private func watch(started: UInt64, patient: Bool, until settled: () -> Bool) async -> StoreUnavailable? {
        while true {
            let now = Self.now
            let heard = max(started, liveness.lastAnswer.load(ordering: .relaxed))
            let quiet = patient || liveness.reachable.load(ordering: .relaxed) ? Self.silence : Self.impatience
            let silent = heard + Self.nanoseconds(quiet)
            let last = started + Self.nanoseconds(Self.longest)
            if now >= last {
                return StoreUnavailable(description: "the database did not finish the operation within \(Int(Self.longest)) s")
            }
            if now >= silent {
                // A probe under way may yet hear it; a patient operation waits for its word.
                if quiet == Self.silence, let probe = liveness.probe.withLock({ $0.running }) {
                    await probe.value
                    if settled() { return nil }
                    continue
                }
                liveness.reachable.store(false, ordering: .relaxed)
                return StoreUnavailable(description: "the database answered nothing for \(Int(quiet)) s")
            }
            // A probe once nothing answered for `probeAfter`, and again each `probeAfter` after.
            var probeAt = heard + Self.nanoseconds(Self.probeAfter)
            if now >= probeAt {
                probe()
                probeAt = now + Self.nanoseconds(Self.probeAfter)
            }
            try? await Task.sleep(nanoseconds: min(silent, last, probeAt) - now)
            if settled() { return nil }
        }
    }

    /// Starts a probe, unless one is under way or one started less than `probeAfter` ago.
    private func probe() {
        let (liveness, prober) = (liveness, prober)
        liveness.probe.withLock { state in
            let now = Self.now
            guard state.running == nil, now >= state.started + Self.nanoseconds(Self.probeAfter) else { return }
            state.started = now
            state.running = Task {
                if await Self.answers(within: Self.probeTimeout, prober.ask) { liveness.answered() }
                liveness.probe.withLock { $0.running = nil }
            }
        }
    }

    /// Whether `ask` returns within `seconds` (it is cancelled after).
    private static func answers(within seconds: Double, _ ask: @escaping @Sendable () async throws -> Void) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await ask()) != nil }
            group.addTask {
                try? await Task.sleep(nanoseconds: nanoseconds(seconds))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
