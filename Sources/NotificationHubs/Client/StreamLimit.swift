import Synchronization

/// At most `limit` holders at once; the rest wait in order (HubClient's requests per hub, the
/// hub's streams to a push service).
package final class StreamLimit: Sendable {
    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state: Mutex<State>

    package init(_ limit: Int) { state = Mutex(State(free: max(1, limit))) }

    package func acquire() async {
        await withCheckedContinuation { continuation in
            let go = state.withLock { state -> Bool in
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if go { continuation.resume() }
        }
    }

    package func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
