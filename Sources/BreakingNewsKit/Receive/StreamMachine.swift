import NotificationHubs

/// How the connection to the device stream is doing, as the screen and `log --follow` say it.
public enum ConnectionStatus: Sendable, Hashable {
    case connecting
    case online
    /// Lost; the next try is in `seconds`.
    case reconnecting(seconds: Double, reason: String)
    /// Given up: the hub refused the stream or has no sandbox push service.
    case offline(String)
    /// The hub knows nothing of this device yet (never registered, or its claim was let go):
    /// tried again after the next registration, and now and then.
    case notRegistered
    case stopped
}

/// The device stream's connection as a pure state machine: events in, actions out. It
/// resumes after the last delivery seen and backs off (`Backoff`: up to 1 s, 2 s, … 60 s,
/// jittered) between tries.
public struct StreamMachine: Sendable, Hashable {
    public enum State: Sendable, Hashable {
        case idle
        case connecting
        case live
        case waiting
        case stopped
    }

    public enum Event: Sendable, Hashable {
        case start
        /// The stream answered 200 and is open.
        case opened
        /// A delivery with this sequence number arrived.
        case delivery(seq: Int64)
        /// The stream ended or could not be opened; worth retrying.
        case closed(reason: String)
        /// The stream was refused for good (401, 403, no sandbox).
        case refused(reason: String)
        /// The hub does not know the device (yet).
        case unregistered
        case retryTimerFired
        case stop
    }

    public enum Action: Sendable, Hashable {
        /// Open the stream, resuming after `lastEventId`.
        case open(lastEventId: Int64?)
        /// Wait, then send `retryTimerFired`.
        case wait(seconds: Double)
        case report(ConnectionStatus)
        /// Close any open stream.
        case close
    }

    public private(set) var state: State = .idle
    /// The last delivery seen: where a new connection resumes.
    public private(set) var lastEventId: Int64?
    public private(set) var backoff: Backoff

    public init(lastEventId: Int64? = nil, backoff: Backoff = Backoff()) {
        self.lastEventId = lastEventId
        self.backoff = backoff
    }

    /// Seconds between tries while the hub does not know the device.
    public static let unregisteredRetry = 5.0

    /// Forgets the resume point: the hub's delivery log started again (a new epoch).
    public mutating func resetResumePoint() { lastEventId = nil }

    public mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.stopped, _):
            return []
        case (_, .stop):
            state = .stopped
            return [.close, .report(.stopped)]
        case (.idle, .start):
            state = .connecting
            return [.report(.connecting), .open(lastEventId: lastEventId)]
        case (.connecting, .opened):
            state = .live
            backoff.reset()
            return [.report(.online)]
        case (.connecting, .delivery(let seq)), (.live, .delivery(let seq)):
            lastEventId = max(lastEventId ?? 0, seq)
            return []
        case (.connecting, .closed(let reason)), (.live, .closed(let reason)):
            state = .waiting
            let delay = backoff.fail()
            return [.close, .report(.reconnecting(seconds: delay, reason: reason)), .wait(seconds: delay)]
        case (.connecting, .refused(let reason)), (.live, .refused(let reason)), (.waiting, .refused(let reason)):
            state = .stopped
            return [.close, .report(.offline(reason))]
        case (.connecting, .unregistered), (.live, .unregistered):
            // Not a failure of the connection: no backoff, a try after the next registration
            // (which rings) or after `unregisteredRetry`.
            state = .waiting
            return [.close, .report(.notRegistered), .wait(seconds: Self.unregisteredRetry)]
        case (.waiting, .retryTimerFired):
            state = .connecting
            return [.report(.connecting), .open(lastEventId: lastEventId)]
        default:
            return []
        }
    }
}
