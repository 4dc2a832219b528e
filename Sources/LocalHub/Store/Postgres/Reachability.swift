import Logging
import Synchronization

/// What asks the server whether it answers at all, outside the pool (`PostgresProbe`).
protocol ReachabilityProbe: Sendable {
    /// Asks the server something; throws when it gets no answer. Cancelled after `probeTimeout`.
    func ask() async throws
    /// Lets go of what it holds.
    func close()
}

/// How long operations on one database may wait for it: runs each under the watch of a
/// `DatabaseWatchdog` (whose rule it keeps: a slow database is not a down one) and does what
/// the watchdog asks. One per store, which judges its database by itself; its probes run in
/// `run()`, beside the store's pool (`PostgresHubStore.runPool`).
///
/// The probe asks on a connection of its own, not one of the pool's: operations held by a
/// lock or a full pool prove nothing, and a probe queued behind them would prove nothing
/// either.
final class Reachability: Sendable {
    private struct State {
        var watchdog: DatabaseWatchdog
        var numbered = 0
        /// Operations the watchdog failed, until their watch takes the reason.
        var failed: [DatabaseWatchdog.OperationID: StoreUnavailable] = [:]
        /// Why the last probe got no answer (a refused connection, a wrong password), until
        /// one gets an answer: what operations failed meanwhile say, and the log once.
        var probeFailure: StoreUnavailable?
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

    deinit { prober.close() }

    /// Runs the probes the watchdog asks for, one at a time, until cancelled or `shutdown()`;
    /// lets go of the probe's connection when it returns.
    func run() async {
        for await _ in probes.stream {
            let failure = await Self.failure(within: timings.probeTimeout, prober.ask)
            let news = state.withLock { state in
                defer { state.probeFailure = failure }
                return failure?.description != state.probeFailure?.description ? failure : nil
            }
            if let news, !Task.isCancelled { logger.warning("the database cannot be used: \(news.description)") }
            handle(failure == nil ? .probeAnswered(at: .now) : .probeFailed(at: .now))
        }
        prober.close()
    }

    /// Runs no more probes: `run()` returns.
    func shutdown() { probes.continuation.finish() }

    /// Runs `body`, racing it against its watch: the caller gets its result, or fails as
    /// unavailable once the watchdog says so, or stops waiting at once when it is cancelled
    /// (the body is cancelled in the last two cases).
    ///
    /// The body runs in a task of its own, not a child the caller waits for: a statement sent
    /// waits for its answer whatever cancellation says, and the only way to end it sooner,
    /// closing its connection, is not safe with postgres-nio, which drops a statement written
    /// to a connection whose channel has closed and never answers it (the pool can lease out
    /// a connection closed a moment before, and a transaction sends its ROLLBACK after the
    /// failure the close caused), so the caller would wait for ever. Left running, the body
    /// ends when the server answers or the connection fails.
    func withDeadline<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let operation = state.withLock { state in
            state.numbered += 1
            return DatabaseWatchdog.OperationID(number: state.numbered)
        }
        handle(.operationStarted(operation, at: .now))
        let outcome = Outcome<T>()
        let work = Task {
            let result: Result<T, any Error>
            do {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            self.report(operation, result)
            outcome.settle(result)
        }
        defer { work.cancel() }
        return try await withThrowingTaskGroup(of: Ended<T>.self) { group in
            defer { group.cancelAll() }
            group.addTask { .value(try await outcome.value) }
            group.addTask {
                try await self.watch(operation)
                return .watched
            }
            while let first = try await group.next() {
                if case .value(let value) = first { return value }
            }
            throw CancellationError()
        }
    }

    /// What a child of `withDeadline` ended with.
    private enum Ended<T: Sendable>: Sendable {
        case value(T)
        /// The watch is over: the operation no longer waits, and its result is on its way.
        case watched
    }

    /// `result`, told to the watchdog: an answer, a refusal (an answer too) or none.
    private func report<T>(_ operation: DatabaseWatchdog.OperationID, _ result: Result<T, any Error>) {
        switch result {
        case .success, .failure(is StoreFailure): handle(.operationAnswered(operation, at: .now))
        case .failure: handle(.operationFailed(operation, at: .now))
        }
    }

    /// Returns once the operation no longer waits (with what the watchdog failed it for, as
    /// an error), checking each time the watchdog's next check or `tick` comes.
    private func watch(_ operation: DatabaseWatchdog.OperationID) async throws {
        while true {
            let (next, failure) = state.withLock { state in
                (state.watchdog.nextCheck(for: operation), state.failed.removeValue(forKey: operation))
            }
            if let failure { throw failure }
            guard let next else { return }
            let now = ContinuousClock.now
            try await Task.sleep(until: min(max(next, now), now + Self.tick), clock: .continuous)
            handle(.timePassed(.now))
        }
    }

    /// Feeds the watchdog `event` and does what it asks.
    private func handle(_ event: DatabaseWatchdog.Event) {
        let actions = state.withLock { state in
            switch event {
            case .operationAnswered(let operation, _):
                state.failed[operation] = nil
                state.probeFailure = nil
            case .operationFailed(let operation, _): state.failed[operation] = nil
            default: break
            }
            let actions = state.watchdog.handle(event)
            // What the probe met says more than how long nothing answered.
            for case .fail(let operation, let reason) in actions {
                state.failed[operation] = state.probeFailure ?? StoreUnavailable(description: reason)
            }
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

    /// Nil when `ask` returns within `timeout` (it is cancelled after); else why not.
    private static func failure(within timeout: Duration, _ ask: @escaping @Sendable () async throws -> Void) async
        -> StoreUnavailable?
    {
        await withTaskGroup(of: StoreUnavailable?.self) { group in
            group.addTask {
                do {
                    try await ask()
                    return nil
                } catch let problem as DatabaseProblem {
                    return StoreUnavailable(description: problem.description, kind: problem.kind)
                } catch {
                    return StoreUnavailable(
                        description: "the database's probe failed (\(String("\(error)".prefix(200))))", kind: nil)
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return StoreUnavailable(
                    description: "the database answered nothing for \(DatabaseWatchdog.seconds(timeout))", kind: .unreachable)
            }
            let first = await group.next() ?? StoreUnavailable(description: "no probe ran")
            group.cancelAll()
            return first
        }
    }
}

/// The result of an operation running in a task of its own, which one waiter takes; a
/// cancelled waiter stops waiting at once.
private final class Outcome<T: Sendable>: Sendable {
    private enum State {
        case pending
        case waiting(CheckedContinuation<T, any Error>)
        case settled(Result<T, any Error>)
        case abandoned
    }

    private let state = Mutex<State>(.pending)

    func settle(_ result: Result<T, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<T, any Error>? in
            switch state {
            case .waiting(let continuation):
                state = .abandoned
                return continuation
            case .pending:
                state = .settled(result)
                return nil
            case .settled, .abandoned:
                return nil
            }
        }
        waiter?.resume(with: result)
    }

    var value: T {
        get async throws {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let ready = state.withLock { state -> Result<T, any Error>? in
                        switch state {
                        case .pending:
                            state = .waiting(continuation)
                            return nil
                        case .settled(let result):
                            state = .abandoned
                            return result
                        case .abandoned, .waiting:
                            return .failure(CancellationError())
                        }
                    }
                    if let ready { continuation.resume(with: ready) }
                }
            } onCancel: {
                let waiter = state.withLock { state -> CheckedContinuation<T, any Error>? in
                    defer { state = .abandoned }
                    if case .waiting(let continuation) = state { return continuation }
                    return nil
                }
                waiter?.resume(throwing: CancellationError())
            }
        }
    }
}
