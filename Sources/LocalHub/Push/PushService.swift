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
    /// Not delivered: `name` is the telemetry counter (`InvalidNotificationSize`…), `text`
    /// the line a test send reports.
    case refused(name: String, text: String)
}

/// A push service: rendered notifications for devices of one platform in, an outcome per
/// notification out. Providers never touch the store; the dispatcher records what they
/// report. The built-in sandbox push service is the first; APNs, FCM v1 and Web Push follow.
public protocol PushService: Sendable {
    /// The platform whose devices this service reaches.
    var platform: Platform { get }
    /// Whether the hub keeps what this service delivered in its delivery log (the sandbox's
    /// devices read their news from there), numbering each delivery.
    var keepsDeliveryLog: Bool { get }
    /// Why a rendered payload cannot be sent at all (too large, not the platform's shape),
    /// or nil; checked once per distinct payload of a send.
    func check(_ payload: [UInt8]) -> PushOutcome?
    /// Sends; returns one outcome per delivery of each send, in order.
    func push(_ sends: [PushSend]) async -> [[PushOutcome]]
}
