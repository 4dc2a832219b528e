import Synchronization

/// A wait that ends after its time, when rung, or when its task is cancelled. A ring while
/// nothing waits ends the next wait at once, unless a try starts first (`reset`).
final class RetryAlarm: Sendable {
    /// How a wait ended.
    enum Outcome: Sendable, Hashable {
        case elapsed
        /// Rung; `startingHub` when the ring asked to start a stopped hub.
        case rung(startingHub: Bool)
    }

    private struct State {
        var waiter: CheckedContinuation<Outcome, Never>?
        var rung: Outcome?
    }

    private let state = Mutex(State())

    func ring(startingHub: Bool = false) {
        let outcome = Outcome.rung(startingHub: startingHub)
        let waiter = state.withLock { state -> CheckedContinuation<Outcome, Never>? in
            guard let waiter = state.waiter else {
                // Remembered for the next wait; a ring that starts the hub is not forgotten
                // behind one that does not.
                if state.rung != .rung(startingHub: true) { state.rung = outcome }
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: outcome)
    }

    /// Forgets a ring that came while nothing waited.
    func reset() { state.withLock { $0.rung = nil } }

    /// Waits `seconds`, or until rung or cancelled (which reads as elapsed).
    func wait(seconds: Double) async -> Outcome {
        await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                try? await Task.sleep(for: .seconds(max(0, min(seconds, 1e9))))
                return .elapsed
            }
            group.addTask { await self.rung() }
            let first = await group.next() ?? .elapsed
            group.cancelAll()
            return first
        }
    }

    /// Returns once rung, or cancelled.
    private func rung() async -> Outcome {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let now = state.withLock { state -> Outcome? in
                    if let rung = state.rung {
                        state.rung = nil
                        return rung
                    }
                    if Task.isCancelled { return .elapsed }
                    state.waiter = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Outcome, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: .elapsed)
        }
    }
}
