import Synchronization

/// A queue with one consumer that takes everything waiting at once: the basis of group
/// commit (the writer) and of batched dispatch.
final class WorkQueue<Item: Sendable>: Sendable {
    private struct State {
        var items: [Item] = []
        var closed = false
    }

    private let state = Mutex(State())
    private let signal: AsyncStream<Void>.Continuation
    /// Wakes the consumer after each push; it then drains with `take`.
    let wakeups: AsyncStream<Void>

    init() {
        (wakeups, signal) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Adds an item; returns false (and drops it) when the queue is closed.
    @discardableResult
    func push(_ item: Item) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.items.append(item)
            return true
        }
        if accepted { signal.yield() }
        return accepted
    }

    /// Whether the queue was closed: its consumer is to finish what it holds and stop.
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Takes up to `limit` waiting items, oldest first.
    func take(limit: Int) -> [Item] {
        state.withLock { state in
            guard !state.items.isEmpty else { return [] }
            let count = min(limit, state.items.count)
            let batch = Array(state.items.prefix(count))
            state.items.removeFirst(count)
            return batch
        }
    }

    /// Refuses further items, ends `wakeups`, and returns what was still waiting.
    func close() -> [Item] {
        let rest = state.withLock { state in
            state.closed = true
            defer { state.items = [] }
            return state.items
        }
        signal.finish()
        return rest
    }
}
