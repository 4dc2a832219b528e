import NotificationHubs

/// One notification's rendered messages for the devices of one push service, as the
/// dispatcher hands them over: the notification (its id, tags and the sender's `apns-*`
/// headers) once, and a delivery per device (its handle and payload; `seq` is set only for a
/// service whose deliveries the hub keeps in its delivery log).
public struct PushSend: Sendable {
    public let notification: StoredNotification
    public let deliveries: [Delivery]

    public init(notification: StoredNotification, deliveries: [Delivery]) {
        self.notification = notification
        self.deliveries = deliveries
    }
}

/// What became of one message, as the service reports it.
public enum PushOutcome: Sendable, Hashable {
    case delivered
    /// Not delivered: `name` is the telemetry counter, `text` the line a test send reports.
    case refused(name: OutcomeName, text: String)
    /// Not delivered, and the device's channel cannot be used again (`ExpiredChannel`: the app
    /// is gone; `BadChannel`: the handle is not one the service knows): the hub marks the
    /// installation's `pushChannelExpired`, removes such legacy registrations, and sends to
    /// the channel no more until the device registers it again.
    case gone(name: OutcomeName, text: String)
}

/// The push services a hub delivers through. Every platform's message goes to one of them:
/// APNs installations to the built-in push service unless the hub has APNs credentials and the
/// token was not claimed by a terminal; `fcmv1` and `browser` to their services when the hub
/// has credentials for them.
public enum PushServiceKind: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// The built-in push service of terminals; first, so a terminal sees news at once.
    case builtIn
    case apns
    case fcmV1
    case webPush

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .builtIn: "the built-in push service"
        case .apns: "APNs"
        case .fcmV1: "FCM v1"
        case .webPush: "Web Push"
        }
    }
}

/// A browser's Web Push keys (base64url), from its installation's `pushChannel`.
public struct WebPushKeys: Sendable, Hashable {
    public let p256dh: String
    public let auth: String

    public init(p256dh: String, auth: String) {
        self.p256dh = p256dh
        self.auth = auth
    }
}

/// A push service: rendered notifications for devices of one platform in, an outcome per
/// notification out. Providers never touch the store; the dispatcher records what they
/// report. The built-in built-in push service is the first; APNs, FCM v1 and Web Push follow.
public protocol PushService: Sendable {
    var kind: PushServiceKind { get }
    /// The platform whose devices this service reaches.
    var platform: Platform { get }
    /// Whether this service delivers for `hub` (a real service, when the hub has credentials
    /// for it).
    func serves(hub: String) -> Bool
    /// Whether the hub keeps what this service delivered in its delivery log (the built-in service's
    /// devices read their news from there), numbering each delivery.
    var keepsDeliveryLog: Bool { get }
    /// Why a rendered payload cannot be sent at all (too large, not the platform's shape),
    /// or nil; checked once per distinct payload of a send.
    func check(_ payload: [UInt8]) -> PushOutcome?
    /// Sends; returns one outcome per delivery of each send, in order.
    func push(_ sends: [PushSend]) async -> [[PushOutcome]]
}
