import NIOCore
import Synchronization

/// How many requests of a Web Push client are in flight at once, all origins together, and
/// which origin goes next when one ends. Origins take turns, one waiting request each, so a
/// thousand requests of one origin never stand in front of another's first. An origin whose
/// last try got no answer in time is *slow*: slow origins together hold at most
/// three quarters of the slots and are served only when no other origin waits, so origins a
/// stranger made to stall (any number of them: a name costs nothing) cannot keep a working
/// push service waiting. An origin is slow until it answers again.
final class OriginLimit: Sendable {
    private struct State {
        var free: Int
        /// Each waiting origin's requests, first come first served.
        var queues: [String: CircularBuffer<CheckedContinuation<Void, Never>>] = [:]
        /// Origins with waiting requests, in turn: `[0]` in good standing, `[1]` slow.
        var turns: [CircularBuffer<String>] = [[], []]
        var waiting = 0
    }

    private let state: Mutex<State>
    /// Slots slow origins may never take.
    private let reserved: Int
    let limit: Int

    init(_ limit: Int) {
        self.limit = max(1, limit)
        reserved = self.limit == 1 ? 0 : max(1, self.limit / 4)
        state = Mutex(State(free: self.limit))
    }

    /// Requests in flight now.
    var inFlight: Int { state.withLock { limit - $0.free } }
    /// Requests waiting for a slot.
    var waiting: Int { state.withLock { $0.waiting } }

    /// Waits for a slot for a request to `origin`; give it back with `release()`.
    func acquire(_ origin: String, slow: Bool) async {
        await withCheckedContinuation { continuation in
            let go = state.withLock { state -> Bool in
                if Self.mayTake(&state, slow: slow, reserved: reserved) { return true }
                if state.queues[origin] == nil {
                    state.queues[origin] = []
                    state.turns[slow ? 1 : 0].append(origin)
                }
                state.queues[origin]!.append(continuation)
                state.waiting += 1
                return false
            }
            if go { continuation.resume() }
        }
    }

    /// Gives a slot back: to the next origin in good standing that waits, else to the next
    /// slow one while slow origins hold less than their share.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.free += 1
            // An origin is in `turns` exactly while it has waiting requests.
            for (index, isSlow) in [(0, false), (1, true)] {
                guard let origin = state.turns[index].first, var queue = state.queues[origin],
                    Self.mayTake(&state, slow: isSlow, reserved: reserved)
                else { continue }
                state.turns[index].removeFirst()
                let waiter = queue.removeFirst()
                if queue.isEmpty {
                    state.queues[origin] = nil
                } else {
                    state.queues[origin] = queue
                    state.turns[index].append(origin)
                }
                state.waiting -= 1
                return waiter
            }
            return nil
        }
        next?.resume()
    }

    /// Takes a slot when one is free to a request of this standing.
    private static func mayTake(_ state: inout State, slow: Bool, reserved: Int) -> Bool {
        guard state.free > (slow ? reserved : 0) else { return false }
        state.free -= 1
        return true
    }
}
