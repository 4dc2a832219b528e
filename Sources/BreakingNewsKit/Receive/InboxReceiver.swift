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

/// Keeps this terminal's device stream open: resumes after the last delivery after any
/// disconnect (backing off 1 s to 60 s, or 0.25 s to 1 s on the embedded hub, where a try
/// costs nothing), dedupes, appends to the log, and reports its connection. What it appended
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
    ///   - starting: whether the embedded hub is started when none runs (see `HubEndpoint.Start`).
    public init(
        sandbox: SandboxClient, log: InboxLog, catalog: NewsCatalog, follower: LogFollower? = nil, backoff: Backoff? = nil,
        starting: HubEndpoint.Start = .never
    ) {
        let (statuses, continuation) = AsyncStream<ConnectionStatus>.makeStream(bufferingPolicy: .unbounded)
        self.statuses = statuses
        let hubURL = sandbox.endpoint.hubURL
        let backoff = backoff ?? (sandbox.endpoint.isEmbedded ? Self.loopbackBackoff : Backoff())
        let alarm = alarm
        task = Task {
            let resume = log.resumePoint(hubName: sandbox.endpoint.hubName)
            var machine = StreamMachine(lastEventId: resume?.seq, backoff: backoff)
            var epoch = resume?.epoch
            var pending = machine.handle(.start)
            while !pending.isEmpty {
                let action = pending.removeFirst()
                switch action {
                case .report(let status):
                    continuation.yield(status)
                case .close:
                    break
                case .wait(let seconds):
                    await alarm.wait(seconds: seconds)
                    pending += machine.handle(Task.isCancelled ? .stop : .retryTimerFired)
                case .open(let lastEventId):
                    alarm.reset()
                    let event = await Self.receive(
                        sandbox: sandbox, starting: starting, after: lastEventId, epoch: &epoch, machine: &machine, log: log,
                        catalog: catalog, follower: follower, hubURL: hubURL, continuation: continuation, pending: &pending)
                    pending += machine.handle(Task.isCancelled ? .stop : event)
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { [task] _ in task.cancel() }
    }

    /// Stops receiving; `statuses` ends after reporting `.stopped`.
    public func stop() { task.cancel() }

    /// Ends the wait before the next try now (the user asked).
    public func retryNow() { alarm.ring() }

    /// Opens the stream and reads it until it ends; returns the event that ended it.
    private static func receive(
        sandbox: SandboxClient, starting: HubEndpoint.Start, after lastEventId: Int64?, epoch: inout String?,
        machine: inout StreamMachine, log: InboxLog, catalog: NewsCatalog, follower: LogFollower?, hubURL: String,
        continuation: AsyncStream<ConnectionStatus>.Continuation, pending: inout [StreamMachine.Action]
    ) async -> StreamMachine.Event {
        let stream: DeviceStream
        do {
            stream = try await sandbox.current(starting: starting).stream(after: lastEventId, epoch: epoch)
        } catch {
            if error.notRegistered { return .unregistered }
            return error.isRefusal ? .refused(reason: error.description) : .closed(reason: error.description)
        }
        pending += machine.handle(.opened)
        // Report "online" before blocking on the stream.
        while let first = pending.first, case .report(let status) = first {
            continuation.yield(status)
            pending.removeFirst()
        }
        do {
            for try await deliveries in stream {
                let added = try log.append(deliveries, hub: hubURL, categoryOf: { catalog.category(of: $0)?.name })
                for delivery in deliveries {
                    if delivery.epoch != epoch {
                        // A new delivery log: sequence numbers restart, so the resume point does too.
                        epoch = delivery.epoch
                        machine.resetResumePoint()
                    }
                    _ = machine.handle(.delivery(seq: delivery.seq))
                }
                if !added.isEmpty { follower?.poll() }
            }
            return .closed(reason: "the hub closed the stream")
        } catch {
            return .closed(reason: "the stream was cut: \(HubClient.describe(error))")
        }
    }
}

/// A wait that ends after its time, when rung, or when its task is cancelled. A ring while
/// nothing waits ends the next wait at once, unless a try starts first (`reset`).
final class RetryAlarm: Sendable {
    private struct State {
        var waiter: CheckedContinuation<Void, Never>?
        var rung = false
    }

    private let state = Mutex(State())

    func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.rung = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Forgets a ring that came while nothing waited.
    func reset() { state.withLock { $0.rung = false } }

    func wait(seconds: Double) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000)) }
            group.addTask { await self.rung() }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns once rung, or cancelled.
    private func rung() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.rung || Task.isCancelled {
                        state.rung = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
