/// How the connection to the device stream is doing, as the screen and `log --follow` say it.
public enum ConnectionStatus: Sendable, Hashable {
    case connecting
    case online
    /// Lost; the next try is in `seconds`.
    case reconnecting(seconds: Double, reason: String)
    /// Not receiving, for a reason that waiting a second does not cure (see `OfflineReason`).
    case offline(OfflineReason)
    /// The receiver was stopped.
    case stopped
}

/// Why a terminal is not receiving, typed so that the screen and `log` decide on the case,
/// never on the wording.
public enum OfflineReason: Sendable, Hashable, CustomStringConvertible {
    /// The hub refused this terminal's key (401, 403): retrying cannot help. Gives up.
    case refused(String)
    /// The hub has no built-in push service (Azure): news reaches real devices only. Gives up.
    case noPushService
    /// The hub streams only to a device it knows (claimed, or in an installation): tried
    /// again after the next registration.
    case notRegistered
    /// The embedded hub is not running: `hub stop` stopped it. `r`, a send or a subscribe
    /// starts it again; another process of the home starting it is noticed within a second.
    case hubStopped
    /// The hub could not be found or started (its port held by another program, a start
    /// that failed, a hub that does not answer); tried again with backoff.
    case unavailable(String)

    /// True when the receiver gave up: only a new receiver (the user's `r`) tries again.
    public var gaveUp: Bool {
        switch self {
        case .refused, .noPushService: return true
        case .notRegistered, .hubStopped, .unavailable: return false
        }
    }

    /// The reason in words, for the screen and standard error.
    public var description: String {
        switch self {
        case .refused(let detail): return detail
        case .noPushService: return Self.noPushServiceText
        case .notRegistered:
            return
                "not registered: news is not reaching this terminal; the hub streams to it once it is subscribed (choose categories and subscribe)"
        case .hubStopped:
            return "the local hub was stopped ('breaking-news hub stop'); r starts it again, and so does a send or a subscribe"
        case .unavailable(let detail): return detail
        }
    }

    static let noPushServiceText =
        "this hub has no built-in push service: on Azure, notifications arrive on real devices, not in this terminal (use 'send --test' to see the hub's outcome)"
}

/// Why opening or reading the device stream failed, classified once (`BuiltInPushClient`) so
/// that the stream's machine decides what comes next.
public enum StreamFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// No answer, or the stream was cut: tried again with backoff.
    case unreachable(String)
    /// 429, or a 5xx with `Retry-After`: tried again after the time the hub asked for.
    case throttled(String, retryAfter: Double?)
    case refused(String)
    case noPushService
    case notRegistered
    case hubStopped
    case unavailable(String)

    public var description: String {
        switch self {
        case .unreachable(let detail), .throttled(let detail, _), .refused(let detail), .unavailable(let detail):
            return detail
        case .noPushService: return OfflineReason.noPushService.description
        case .notRegistered: return OfflineReason.notRegistered.description
        case .hubStopped: return OfflineReason.hubStopped.description
        }
    }

    /// True when retrying cannot help (a wrong key, a hub without the push service).
    public var isRefusal: Bool {
        switch self {
        case .refused, .noPushService: return true
        default: return false
        }
    }
}
