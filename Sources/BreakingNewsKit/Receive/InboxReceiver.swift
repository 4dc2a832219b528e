import Foundation
import NotificationHubs
import Synchronization

/// What a window learns about the news: its receiver's connection, and the log's new entries
/// (from its `LogFollower`).
public enum InboxUpdate: Sendable, Hashable {
    case status(ConnectionStatus)
    /// New messages, already in the log.
    case received([InboxEntry])
}

/// Keeps this terminal's device stream open: runs a `StreamMachine` and does what it asks
/// (open, read, append to the log, wait, close), reporting its connection. What it appended
/// reaches the windows through the log (`LogFollower`, told at once), as what other
/// processes append does. Its `run()` is the work, in its caller's task group.
public final class InboxReceiver: Sendable {
    public let statuses: AsyncStream<ConnectionStatus>
    /// The driver `run()` runs, made there: its stream and pending reads are that task's.
    private let driver: @Sendable () -> Driver
    private let ran = Atomic(false)
    private let alarm = RetryAlarm()
    private let stopping = StopSignal()

    /// The backoff between tries on a hub of this machine: up to 0.5 s, then up to 1 s.
    public static let loopbackBackoff = Backoff(base: 0.5, maximum: 1)

    /// A receiver that starts receiving when `run()` does.
    /// - Parameters:
    ///   - backoff: between tries; `loopbackBackoff` on the embedded hub, `Backoff()` on others.
    ///   - starting: whether the embedded hub is started when none runs (see `HubEndpoint.Start`);
    ///     `retryNow(startingHub: true)` starts it for one try whatever this says.
    public init(
        builtInPush: BuiltInPushClient, log: InboxLog, catalog: NewsCatalog, follower: LogFollower? = nil,
        backoff: Backoff? = nil,
        starting: HubEndpoint.Start = .never
    ) {
        let (statuses, continuation) = AsyncStream<ConnectionStatus>.makeStream(bufferingPolicy: .unbounded)
        self.statuses = statuses
        let resume = log.resumePoint(hubName: builtInPush.endpoint.hubName)
        let machine = StreamMachine(
            lastEventId: resume?.seq, epoch: resume?.epoch,
            backoff: backoff ?? (builtInPush.endpoint.isEmbedded ? Self.loopbackBackoff : Backoff()))
        let alarm = alarm
        driver = {
            Driver(
                builtInPush: builtInPush, starting: starting, log: log, catalog: catalog, follower: follower, alarm: alarm,
                continuation: continuation, machine: machine)
        }
        continuation.onTermination = { [stopping] _ in stopping.stop() }
    }

    /// Receives until it gives up, `stop()` is called or its task is cancelled; `statuses`
    /// ends after reporting `.stopped`. Runs once: a second call returns at once.
    public func run() async {
        guard !ran.exchange(true, ordering: .relaxed) else { return }
        let (driver, stopping) = (driver, stopping)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var running = driver()
                await running.run()
            }
            group.addTask { await stopping.wait() }
            // Either ends the other: the driver gave up, or it is to stop.
            _ = await group.next()
            group.cancelAll()
        }
    }

    /// Stops receiving: `run()` returns, and `statuses` ends after reporting `.stopped`.
    public func stop() { stopping.stop() }

    /// Ends the wait before the next try now; `startingHub` starts a stopped embedded hub for
    /// that try (the user asked).
    public func retryNow(startingHub: Bool = false) { alarm.ring(startingHub: startingHub) }

    /// A wait that ends once `stop()` was called (before or during it), or when cancelled.
    final class StopSignal: Sendable {
        private let state = Mutex<(stopped: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

        func stop() {
            state.withLock { state in
                state.stopped = true
                return state.waiter.take()
            }?.resume()
        }

        func wait() async {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { state -> Bool in
                        if state.stopped || Task.isCancelled { return true }
                        state.waiter = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                state.withLock { $0.waiter.take() }?.resume()
            }
        }
    }

    /// Does what the machine asks, one action after another, and feeds it what came of each.
    struct Driver {
        let builtInPush: BuiltInPushClient
        let starting: HubEndpoint.Start
        let log: InboxLog
        let catalog: NewsCatalog
        let follower: LogFollower?
        let alarm: RetryAlarm
        let continuation: AsyncStream<ConnectionStatus>.Continuation
        var machine: StreamMachine
        /// The open stream, between `open` and `close`.
        var stream: DeviceStream.Iterator?
        /// Deliveries read with a gap, handed over once the gap is in the log.
        var unread: [BuiltInPushDelivery] = []

        mutating func run() async {
            var pending = machine.handle(.start)
            while !pending.isEmpty {
                let action = pending.removeFirst()
                guard let event = await perform(action) else { continue }
                pending += machine.handle(Task.isCancelled ? .stop : event)
            }
            stream = nil
            continuation.finish()
        }

        /// Runs one action; returns the event it ended with, if any.
        mutating func perform(_ action: StreamMachine.Action) async -> StreamMachine.Event? {
            switch action {
            case .report(let status):
                continuation.yield(status)
                return nil
            case .close:
                // Dropping the iterator cancels the request: the hub sees the stream end.
                stream = nil
                unread = []
                return nil
            case .wait(let seconds):
                switch await alarm.wait(seconds: seconds) {
                case .elapsed: return .retryTimerFired
                case .rung(let startingHub): return .retryNow(startingHub: startingHub)
                }
            case .open(let lastEventId, let epoch, let startingHub):
                alarm.reset()
                do throws(StreamFailure) {
                    let current = try await builtInPush.current(starting: startingHub ? .always : starting)
                    stream = try await current.stream(after: lastEventId, epoch: epoch).makeAsyncIterator()
                    return .opened
                } catch {
                    return .failed(error)
                }
            case .read:
                guard var iterator = stream else { return .failed(.unreachable("the stream is not open")) }
                if !unread.isEmpty {
                    defer { unread = [] }
                    return .received(unread)
                }
                defer { stream = iterator }
                do {
                    // Ended by the hub, or due for a fresh token: opened again, quietly.
                    guard let batch = try await iterator.next() else { return .ended }
                    if let gap = batch.gap {
                        unread = batch.deliveries
                        return .gap(gap)
                    }
                    return .received(batch.deliveries)
                } catch {
                    return .failed(.unreachable("the stream was cut: \(HubClient.describe(error))"))
                }
            case .append(let deliveries):
                do {
                    let added = try log.append(deliveries, hub: builtInPush.endpoint.hubURL) { catalog.category(of: $0)?.name }
                    if !added.isEmpty { follower?.poll() }
                    return .appended(deliveries)
                } catch {
                    return .failed(.unreachable("cannot write \(log.url.path): \(error.localizedDescription)"))
                }
            case .recordGap(let gap, let epoch):
                do {
                    let added = try log.appendGap(
                        gap, hub: builtInPush.endpoint.hubURL, hubName: builtInPush.endpoint.hubName, epoch: epoch)
                    if added != nil { follower?.poll() }
                    return .gapRecorded(gap)
                } catch {
                    return .failed(.unreachable("cannot write \(log.url.path): \(error.localizedDescription)"))
                }
            }
        }
    }
}
