import Foundation
import NotificationHubs

/// What a window learns about the news: its receiver's connection, and the log's new entries
/// (from its `LogFollower`).
public enum InboxUpdate: Sendable, Hashable {
    case status(ConnectionStatus)
    /// New messages, already in the log.
    case received([InboxEntry])
}

/// Keeps this terminal's device stream open: resumes after the last delivery after any
/// disconnect (backing off 1 s to 60 s), dedupes, appends to the log, and reports its
/// connection. What it appended reaches the windows through the log (`LogFollower`, told at
/// once), as what other processes append does.
public final class InboxReceiver: Sendable {
    public let statuses: AsyncStream<ConnectionStatus>
    private let task: Task<Void, Never>

    /// Starts receiving at once.
    public init(
        sandbox: SandboxClient, log: InboxLog, catalog: NewsCatalog, follower: LogFollower? = nil, backoff: Backoff = Backoff()
    ) {
        let (statuses, continuation) = AsyncStream<ConnectionStatus>.makeStream(bufferingPolicy: .unbounded)
        self.statuses = statuses
        let hubURL = sandbox.endpoint.hubURL
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
                    do {
                        try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
                        pending += machine.handle(.retryTimerFired)
                    } catch {
                        pending += machine.handle(.stop)
                    }
                case .open(let lastEventId):
                    let event = await Self.receive(
                        sandbox: sandbox, after: lastEventId, epoch: &epoch, machine: &machine, log: log, catalog: catalog,
                        follower: follower, hubURL: hubURL,
                        continuation: continuation, pending: &pending)
                    pending += machine.handle(Task.isCancelled ? .stop : event)
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { [task] _ in task.cancel() }
    }

    /// Stops receiving; `statuses` ends after reporting `.stopped`.
    public func stop() { task.cancel() }

    /// Opens the stream and reads it until it ends; returns the event that ended it.
    private static func receive(
        sandbox: SandboxClient, after lastEventId: Int64?, epoch: inout String?, machine: inout StreamMachine, log: InboxLog,
        catalog: NewsCatalog, follower: LogFollower?,
        hubURL: String, continuation: AsyncStream<ConnectionStatus>.Continuation, pending: inout [StreamMachine.Action]
    ) async -> StreamMachine.Event {
        let stream: DeviceStream
        do {
            stream = try await sandbox.current().stream(after: lastEventId, epoch: epoch)
        } catch {
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
