import Foundation
import NotificationHubs

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
/// processes append does.
public final class InboxReceiver: Sendable {
    public let statuses: AsyncStream<ConnectionStatus>
    private let task: Task<Void, Never>
    private let alarm = RetryAlarm()

    /// The backoff between tries on a hub of this machine: up to 0.5 s, then up to 1 s.
    public static let loopbackBackoff = Backoff(base: 0.5, maximum: 1)

    /// Starts receiving at once.
    /// - Parameters:
    ///   - backoff: between tries; `loopbackBackoff` on the embedded hub, `Backoff()` on others.
    ///   - starting: whether the embedded hub is started when none runs (see `HubEndpoint.Start`);
    ///     `retryNow(startingHub: true)` starts it for one try whatever this says.
    public init(
        sandbox: SandboxClient, log: InboxLog, catalog: NewsCatalog, follower: LogFollower? = nil, backoff: Backoff? = nil,
        starting: HubEndpoint.Start = .never
    ) {
        let (statuses, continuation) = AsyncStream<ConnectionStatus>.makeStream(bufferingPolicy: .unbounded)
        self.statuses = statuses
        let resume = log.resumePoint(hubName: sandbox.endpoint.hubName)
        let machine = StreamMachine(
            lastEventId: resume?.seq, epoch: resume?.epoch,
            backoff: backoff ?? (sandbox.endpoint.isEmbedded ? Self.loopbackBackoff : Backoff()))
        let alarm = alarm
        task = Task {
            var driver = Driver(
                sandbox: sandbox, starting: starting, log: log, catalog: catalog, follower: follower, alarm: alarm,
                continuation: continuation, machine: machine)
            await driver.run()
        }
        continuation.onTermination = { [task] _ in task.cancel() }
    }

    /// Stops receiving; `statuses` ends after reporting `.stopped`.
    public func stop() { task.cancel() }

    /// Ends the wait before the next try now; `startingHub` starts a stopped embedded hub for
    /// that try (the user asked).
    public func retryNow(startingHub: Bool = false) { alarm.ring(startingHub: startingHub) }

    /// Does what the machine asks, one action after another, and feeds it what came of each.
    struct Driver {
        let sandbox: SandboxClient
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
        var unread: [SandboxDelivery] = []

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
                    let current = try await sandbox.current(starting: startingHub ? .always : starting)
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
                    let added = try log.append(deliveries, hub: sandbox.endpoint.hubURL) { catalog.category(of: $0)?.name }
                    if !added.isEmpty { follower?.poll() }
                    return .appended(deliveries)
                } catch {
                    return .failed(.unreachable("cannot write \(log.url.path): \(error.localizedDescription)"))
                }
            case .recordGap(let gap, let epoch):
                do {
                    let added = try log.appendGap(
                        gap, hub: sandbox.endpoint.hubURL, hubName: sandbox.endpoint.hubName, epoch: epoch)
                    if added != nil { follower?.poll() }
                    return .gapRecorded(gap)
                } catch {
                    return .failed(.unreachable("cannot write \(log.url.path): \(error.localizedDescription)"))
                }
            }
        }
    }
}
