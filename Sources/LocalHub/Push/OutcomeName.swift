/// What became of a message, as the service's telemetry counts it: the raw value is the
/// counter's name (`Success`, `ExpiredChannel`…), as outcome counts store it.
public enum OutcomeName: String, Sendable, Hashable, CaseIterable, Comparable {
    case success = "Success"
    /// No push service for the device's platform in this hub.
    case skipped = "Skipped"
    /// The app is gone: the channel is not sent to again until it registers.
    case expiredChannel = "ExpiredChannel"
    /// The service does not know the handle.
    case badChannel = "BadChannel"
    case invalidPayload = "InvalidPayload"
    case invalidNotificationSize = "InvalidNotificationSize"
    case invalidCredentials = "InvalidCredentials"
    case throttled = "Throttled"
    case pnsUnavailable = "PnsUnavailable"
    case pnsUnreachable = "PnsUnreachable"
    case pnsServerError = "PnsServerError"
    case pnsInterfaceError = "PnsInterfaceError"
    /// Not sent: what one send rendered for one installation or registration passed its
    /// bound (`DispatchPlanner.renderedBytesPerOwner`).
    case dropped = "Dropped"

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}
