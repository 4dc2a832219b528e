import NIOCore
import NotificationHubs
import Synchronization

/// The built-in push service: APNs-shaped devices that are terminals. A delivery is handed
/// to the device's open streams and kept in the hub's delivery log, from which a device that
/// was offline resumes. How it reaches the streams is the node's to say (`handOff`).
struct BuiltInPushService: PushService {
    let streams: DeviceStreams
    /// Hands the deliveries to the streams and says what became of each: the node's
    /// coordination (`NodeCoordination`); by default, published at once.
    var handOff: any BuiltInPushHandOff = PublishedBeforeCommit()

    var kind: PushServiceKind { .builtIn }
    var platform: Platform { .apns }
    var keepsDeliveryLog: Bool { true }
    func serves(hub: String) -> Bool { true }

    func check(_ payload: [UInt8]) -> PushOutcome? {
        APNsPayloadRules.check(payload).map { .refused(name: $0.outcomeName, text: $0.outcomeText) }
    }

    /// What the hand-off says of each delivery, send by send.
    func push(_ sends: [PushSend]) async -> [[PushOutcome]] {
        let outcomes = await handOff.handOff(
            sends.count == 1 ? sends[0].deliveries : sends.flatMap(\.deliveries), to: streams)
        var answers: [[PushOutcome]] = []
        var next = outcomes.startIndex
        for send in sends {
            let end = min(next + send.deliveries.count, outcomes.endIndex)
            answers.append(Array(outcomes[next..<end]))
            next = end
        }
        return answers
    }

    /// Publishes to live streams before the dispatcher's commit (which then marks them
    /// recorded): a stream sees news as soon as it is numbered. Every delivery is then with
    /// the device's streams, or kept for it until the commit writes it to the log.
    static func publishBeforeCommit(_ deliveries: [Delivery], to streams: DeviceStreams) async -> [PushOutcome] {
        let written = streams.publish(deliveries, recorded: false)
        await awaitWrites(written, atMost: writeWait)
        return Array(repeating: .delivered, count: deliveries.count)
    }

    /// How long the dispatcher waits for the loops to write a publish before it records it.
    static let writeWait: Duration = .milliseconds(100)

    /// Returns once every job has run or `limit` passed, whichever is first: the commit
    /// that follows a publish should not compete with its writes for the processor, and
    /// must never wait long on a loop that is busy with something else or stuck.
    static func awaitWrites(_ jobs: [EventLoopFuture<Void>], atMost limit: Duration) async {
        guard !jobs.isEmpty else { return }
        let wait = WriteWait(jobs: jobs.count)
        await withCheckedContinuation { continuation in
            wait.start(
                continuation,
                timer: Task { [wait] in
                    try? await Task.sleep(for: limit)
                    wait.expire()
                })
            for job in jobs { job.whenComplete { [wait] _ in wait.jobDone() } }
        }
    }
}

/// One wait for a publish's jobs: resumed once, by the last job or by the timer.
private final class WriteWait: Sendable {
    private let state:
        Mutex<(jobs: Int, expired: Bool, continuation: CheckedContinuation<Void, Never>?, timer: Task<Void, Never>?)>

    init(jobs: Int) { state = Mutex((jobs, false, nil, nil)) }

    func start(_ continuation: CheckedContinuation<Void, Never>, timer: Task<Void, Never>) {
        let done = state.withLock { state -> Bool in
            state.timer = timer
            if state.jobs == 0 || state.expired { return true }
            state.continuation = continuation
            return false
        }
        if done {
            timer.cancel()
            continuation.resume()
        }
    }

    func jobDone() {
        let (continuation, timer) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Task<Void, Never>?) in
            state.jobs -= 1
            guard state.jobs == 0 else { return (nil, nil) }
            defer { state.continuation = nil }
            return (state.continuation, state.timer)
        }
        timer?.cancel()
        continuation?.resume()
    }

    func expire() {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.expired = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume()
    }
}

/// How the built-in push service's deliveries reach the device streams, and what became of
/// each, in order: a node's coordination answers (`NodeCoordination`).
protocol BuiltInPushHandOff: Sendable {
    func handOff(_ deliveries: [Delivery], to streams: DeviceStreams) async -> [PushOutcome]
}

/// Publishes at once, before the commit (`BuiltInPushService.publishBeforeCommit`): a hub
/// alone on its store.
struct PublishedBeforeCommit: BuiltInPushHandOff {
    func handOff(_ deliveries: [Delivery], to streams: DeviceStreams) async -> [PushOutcome] {
        await BuiltInPushService.publishBeforeCommit(deliveries, to: streams)
    }
}
