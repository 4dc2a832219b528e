import NotificationHubs

/// The checks the built-in push service applies to a payload before it is delivered, as APNs would:
/// valid JSON, an object with an `aps` dictionary, at most 4096 bytes.
public enum APNsPayloadRules {
    public static let maximumBytes = 4096

    /// Why a payload is refused, as a telemetry outcome name and a test-send outcome text.
    public struct Violation: Sendable, Hashable {
        public let outcomeName: OutcomeName
        public let outcomeText: String
    }

    public static let tooLarge = Violation(
        outcomeName: .invalidNotificationSize, outcomeText: NotificationOutcome.payloadTooLarge)
    public static let invalid = Violation(outcomeName: .invalidPayload, outcomeText: NotificationOutcome.invalidPayload)

    /// The violation, or `nil` when the payload may be delivered.
    public static func check(_ payload: [UInt8]) -> Violation? {
        guard payload.count <= maximumBytes else { return tooLarge }
        guard let json = try? JSONValue(parsing: payload), let aps = json["aps"], aps.objectMembers != nil else { return invalid }
        return nil
    }
}
