import Logging
import Synchronization

/// What asks the server whether it answers at all (`PostgresPoolProbe`).
protocol ReachabilityProbe: Sendable {
    /// Asks the server something; throws when it gets no answer. Cancelled after `probeTimeout`.
    func ask() async throws
}

/// How long operations on one database may wait for it: runs each under the watch of a
/// `DatabaseWatchdog` (whose rule it keeps: a slow database is not a down one) and does what
/// the watchdog asks. One per store, which judges its database by itself; its probes run in
/// `run()`, beside the store's pool (`PostgresHubStore.serve`).
final class Reachability: Sendable {
    private struct State {
        var watchdog: DatabaseWatchdog
        var numbered = 0
        /// Operations the watchdog failed, until their watch takes the reason.
        var failed: [DatabaseWatchdog.OperationID: String] = [:]
    }

    let timings: DatabaseWatchdog.Timings
    private let state: Mutex<State>
    private let prober: any ReachabilityProbe
    private let probes: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)
    private let logger: Logger
    /// The longest a watch sleeps between checks: what a probe's end changes is seen soon.
    static let tick = Duration.milliseconds(250)

    init(probe: any ReachabilityProbe, timings: DatabaseWatchdog.Timings = .standard, logger: Logger) {
        self.timings = timings
        state = Mutex(State(watchdog: DatabaseWatchdog(timings: timings, now: .now)))
        prober = probe
        probes = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.logger = logger
    }

    /// Runs the probes the watchdog asks for, one at a time, until cancelled or `shutdown()`.
    func run() async {
        for await _ in probes.stream {
            let answered = await Self.answers(within: timings.probeTimeout, prober.ask)
            handle(answered ? .probeAnswered(at: .now) : .probeFailed(at: .now))
        }
    }

    /// Runs no more probes: `run()` returns.
    func shutdown() { probes.continuation.finish() }

    /// Runs `body`, racing it against its watch: it fails as unavailable once the watchdog
    /// says so (the body is cancelled then). A cancelled caller stops waiting at once: both
    /// are cancelled with it, and a body that waits on a connection gives it up when
    /// cancelled (`withCancellableConnection`).
    func withDeadline<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let operation = state.withLock { state in
            state.numbered += 1
            return DatabaseWatchdog.OperationID(number: state.numbered)
        }
        handle(.operationStarted(operation, at: .now))
        return try await withThrowingTaskGroup(of: T?.self) { group in
            defer { group.cancelAll() }
            group.addTask { try await self.observe(operation, body) }
            group.addTask {
                try await self.watch(operation)
                return nil
            }
            while let first = try await group.next() {
                if let value = first { return value }
            }
            throw CancellationError()
        }
    }

    /// `body`'s result, told to the watchdog: an answer, a refusal (an answer too) or none.
    private func observe<T>(_ operation: DatabaseWatchdog.OperationID, _ body: () async throws -> T) async throws -> T {
        do {
            let value = try await body()
            handle(.operationAnswered(operation, at: .now))
            return value
        } catch let error as StoreFailure {
            handle(.operationAnswered(operation, at: .now))
            throw error
        } catch {
            handle(.operationFailed(operation, at: .now))
            throw error
        }
    }

    /// Returns once the operation no longer waits (with what the watchdog failed it for, as
    /// an error), checking each time the watchdog's next check or `tick` comes.
    private func watch(_ operation: DatabaseWatchdog.OperationID) async throws {
        while true {
            let (next, failure) = state.withLock { state in
                (state.watchdog.nextCheck(for: operation), state.failed.removeValue(forKey: operation))
            }
            if let failure { throw StoreUnavailable(description: failure) }
            guard let next else { return }
            let now = ContinuousClock.now
            try await Task.sleep(until: min(max(next, now), now + Self.tick), clock: .continuous)
            handle(.timePassed(.now))
        }
    }

    /// Feeds the watchdog `event` and does what it asks.
    private func handle(_ event: DatabaseWatchdog.Event) {
        let actions = state.withLock { state in
            if case .operationAnswered(let operation, _) = event { state.failed[operation] = nil }
            if case .operationFailed(let operation, _) = event { state.failed[operation] = nil }
            let actions = state.watchdog.handle(event)
            for case .fail(let operation, let reason) in actions { state.failed[operation] = reason }
            return actions
        }
        for action in actions {
            switch action {
            case .startProbe:
                // No `run()` to take it any more: the store shut down, and the probe found nothing.
                if case .terminated = probes.continuation.yield(()) { handle(.probeFailed(at: .now)) }
            case .markReachable:
                logger.notice("the database answers again")
            case .fail:
                break
            }
        }
    }

    /// Whether `ask` returns within `timeout` (it is cancelled after).
    private static func answers(within timeout: Duration, _ ask: @escaping @Sendable () async throws -> Void) async
        -> Bool
    {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await ask()) != nil }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
