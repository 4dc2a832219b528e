/// How a real push service sends a dispatch's messages, one request per device, fairly:
///
/// - Messages are grouped in lanes (a Web Push origin; the one endpoint of APNs or FCM), and
///   lanes take turns: a lane with thousands of messages, or a slow one, never keeps another
///   lane's first message waiting behind it.
/// - At most `laneWidth` tries of a lane and `width` in all are in flight at once.
/// - A message the service asked to try again waits in a timer queue, holding no slot and no
///   task, and goes back to its lane when its time comes (`PushRetries`).
///
/// Each final answer is put back in the place of its message.
enum PushFanOut {
    /// Tries in flight at once, all lanes together.
    static let width = 1024

    /// How one service's messages are laned and retried.
    struct Policy: Sendable {
        /// Tries of one lane in flight at once.
        var laneWidth: Int
        /// A message's lane; messages of one lane share a connection's limits.
        var lane: @Sendable (PushSend, Delivery) -> String
        /// A fresh retry budget for a message.
        var retries: @Sendable () -> PushRetries

        /// One lane for everything: a service at one endpoint the operator configured.
        static func single(width: Int, retries: @escaping @Sendable () -> PushRetries) -> Policy {
            Policy(laneWidth: width, lane: { _, _ in "" }, retries: retries)
        }
    }

    private enum Event: Sendable {
        case tried(Int, PushAttempt)
        case woke
    }

    static func push(
        _ sends: [PushSend], width: Int = width, policy: Policy,
        _ attempt: @escaping @Sendable (PushSend, Delivery) async -> PushAttempt
    ) async -> [[PushAnswer]] {
        let work = sends.indices.flatMap { s in sends[s].deliveries.indices.map { (s, $0) } }
        var answers = sends.map { Array(repeating: PushAnswer.unreachable("NotSent"), count: $0.deliveries.count) }
        guard !work.isEmpty else { return answers }
        // Lanes, in the order they first appear, and each message's lane.
        var laneIndex: [String: Int] = [:]
        var laneOf: [Int] = []
        laneOf.reserveCapacity(work.count)
        var queues: [Queue] = []
        for (w, (s, m)) in work.enumerated() {
            let key = policy.lane(sends[s], sends[s].deliveries[m])
            let lane: Int
            if let known = laneIndex[key] {
                lane = known
            } else {
                lane = queues.count
                laneIndex[key] = lane
                queues.append(Queue())
            }
            laneOf.append(lane)
            queues[lane].push(w)
        }
        var inLane = Array(repeating: 0, count: queues.count)
        var inFlight = 0
        var cursor = 0
        var retries: [Int: PushRetries] = [:]
        var waiting = TimerQueue()
        var timer: ContinuousClock.Instant?
        let clock = ContinuousClock()

        await withTaskGroup(of: Event.self) { group in
            func startWhatMay() {
                for w in waiting.takeDue(now: clock.now) { queues[laneOf[w]].push(w) }
                if Task.isCancelled { return }
                // Lanes take turns, one try each, until nothing more may start.
                var idleTurns = 0
                while inFlight < width, idleTurns < queues.count {
                    let lane = cursor
                    cursor = (cursor + 1) % queues.count
                    guard inLane[lane] < policy.laneWidth, let w = queues[lane].pop() else {
                        idleTurns += 1
                        continue
                    }
                    idleTurns = 0
                    inLane[lane] += 1
                    inFlight += 1
                    let (s, m) = work[w]
                    group.addTask { .tried(w, await attempt(sends[s], sends[s].deliveries[m])) }
                }
                if let due = waiting.earliest, timer.map({ due < $0 }) ?? true {
                    timer = due
                    group.addTask {
                        try? await Task.sleep(until: due, clock: clock)
                        return .woke
                    }
                }
            }
            startWhatMay()
            while let event = await group.next() {
                switch event {
                case .woke:
                    if let due = timer, clock.now >= due { timer = nil }
                case .tried(let w, let result):
                    inFlight -= 1
                    inLane[laneOf[w]] -= 1
                    let (s, m) = work[w]
                    answers[s][m] = result.answer
                    if case .again(_, let retryAfter) = result, !Task.isCancelled {
                        var budget = retries[w] ?? policy.retries()
                        if let wait = budget.delay(retryAfter: retryAfter) {
                            retries[w] = budget
                            waiting.add(w, due: clock.now.advanced(by: wait))
                        } else {
                            retries[w] = nil
                        }
                    } else {
                        retries[w] = nil
                    }
                }
                if Task.isCancelled {
                    // Stopping: nothing new starts; what waits keeps its last answer.
                    waiting = TimerQueue()
                    timer = nil
                    continue
                }
                startWhatMay()
            }
        }
        return answers
    }

    /// A first-in, first-out queue of message numbers.
    private struct Queue {
        private var items: [Int] = []
        private var head = 0

        mutating func push(_ item: Int) { items.append(item) }

        mutating func pop() -> Int? {
            guard head < items.count else { return nil }
            defer {
                head += 1
                if head > 64, head * 2 > items.count {
                    items.removeFirst(head)
                    head = 0
                }
            }
            return items[head]
        }
    }

    /// Messages waiting for their next try, earliest first (a binary heap).
    private struct TimerQueue {
        private var heap: [(due: ContinuousClock.Instant, item: Int)] = []

        var earliest: ContinuousClock.Instant? { heap.first?.due }

        mutating func add(_ item: Int, due: ContinuousClock.Instant) {
            heap.append((due, item))
            var child = heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard heap[child].due < heap[parent].due else { break }
                heap.swapAt(child, parent)
                child = parent
            }
        }

        mutating func takeDue(now: ContinuousClock.Instant) -> [Int] {
            var due: [Int] = []
            while let first = heap.first, first.due <= now {
                due.append(first.item)
                heap.swapAt(0, heap.count - 1)
                heap.removeLast()
                var parent = 0
                while true {
                    let left = 2 * parent + 1
                    let right = left + 1
                    var smallest = parent
                    if left < heap.count, heap[left].due < heap[smallest].due { smallest = left }
                    if right < heap.count, heap[right].due < heap[smallest].due { smallest = right }
                    guard smallest != parent else { break }
                    heap.swapAt(parent, smallest)
                    parent = smallest
                }
            }
            return due
        }
    }
}
