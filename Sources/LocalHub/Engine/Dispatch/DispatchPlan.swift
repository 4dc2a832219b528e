import Foundation
import NotificationHubs

/// One notification planned against the hub's tables: a message for each device it
/// reaches, by push service, and what planning already refused.
public struct DispatchPlan: Sendable {
    /// The notification, started.
    public var notification: StoredNotification
    /// The message for each device, by push service, in target order.
    public var messages: [PushServiceKind: [Delivery]] = [:]
    /// For a test send: the results line of a message (by its service and position).
    var reportLines: [PushServiceKind: [Int: Int]] = [:]
    /// Outcome counts so far, keyed by `OutcomeKey`: what planning refused (no push service, a
    /// payload its service refuses, a channel gone); deliveries are counted when their service
    /// answers.
    public var counts: [String: Int] = [:]
    /// Per-device lines for a test send (at most the test limit); a message's line is
    /// filled in when its service answers.
    public var results: [NotificationOutcome.Result] = []
    /// The outcome of each line of `results` (nil until its service answers).
    var resultNames: [OutcomeName?] = []
    /// What the hub's delivery log keeps of this notification, once numbered and pushed.
    var recorded: [Delivery] = []

    /// Messages in all.
    public var messageCount: Int { messages.values.reduce(0) { $0 + $1.count } }
}

/// How outcome counts are keyed: by name for APNs devices (the built-in service's and Apple's, as
/// stored before other platforms were served), `platform/name` for the others.
public enum OutcomeKey {
    public static func key(_ name: OutcomeName, platform: Platform) -> String {
        platform == .apns ? name.rawValue : "\(platform.rawValue)/\(name.rawValue)"
    }

    /// Whether a stored key counts successes.
    public static func isSuccess(_ key: String) -> Bool { OutcomeName(rawValue: split(key).name) == .success }

    /// The platform and outcome name of a key.
    public static func split(_ key: String) -> (platform: Platform, name: String) {
        guard let slash = key.firstIndex(of: "/"), let platform = Platform(wireValue: String(key[..<slash])) else {
            return (.apns, key)
        }
        return (platform, String(key[key.index(after: slash)...]))
    }

    /// Counts by platform, then name.
    public static func byPlatform(_ counts: [String: Int]) -> [Platform: [String: Int]] {
        var result: [Platform: [String: Int]] = [:]
        for (key, count) in counts {
            let (platform, name) = split(key)
            result[platform, default: [:]][name, default: 0] += count
        }
        return result
    }
}
