import Synchronization

/// Runs one piece of catching-up work (reading what other nodes committed) for many callers
/// at once: a caller waits for a run that starts after it asked, so it sees everything
/// committed before its call, and callers arriving during a run share the next one.
final class Refresher: Sendable {
    private struct State {
        /// Runs begun so far; the one running, when `running`, is number `started`.
        var started = 0
        var running = false
        var waiters: [(needed: Int, continuation: CheckedContinuation<Void, Error>)] = []
    }

    private let state = Mutex(State())
    private let work: @Sendable () async throws -> Void

    init(_ work: @escaping @Sendable () async throws -> Void) {
        self.work = work
    }

    /// Returns once a run that began after this call has ended; throws what it threw.
    func refresh() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            let launch = state.withLock { state -> Bool in
                state.waiters.append((state.started + 1, continuation))
                guard !state.running else { return false }
                state.running = true
                state.started += 1
                return true
            }
            if launch { Task { await self.runUntilAnswered() } }
        }
    }

    /// Asks for a run without waiting for it (a wake-up from another node).
    func poke() {
        Task { try? await refresh() }
    }

    private func runUntilAnswered() async {
        while true {
            let result: Result<Void, Error>
            do {
                try await work()
                result = .success(())
            } catch {
                result = .failure(error)
            }
            let (answered, again) = state.withLock { state -> ([CheckedContinuation<Void, Error>], Bool) in
                let run = state.started
                let answered = state.waiters.filter { $0.needed <= run }.map(\.continuation)
                state.waiters.removeAll { $0.needed <= run }
                if state.waiters.isEmpty {
                    state.running = false
                    return (answered, false)
                }
                state.started += 1
                return (answered, true)
            }
            for continuation in answered { continuation.resume(with: result) }
            if !again { return }
        }
    }
}
