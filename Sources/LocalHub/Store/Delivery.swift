import Foundation
import NotificationHubs

/// A message for one device: as the dispatcher hands it to a push service, and as the
/// built-in push service's delivery log keeps it.
public struct Delivery: Sendable, Hashable {
    /// Position in the hub's delivery log; the stream's event id (0 for services that keep
    /// no log).
    public var seq: Int64
    public var hub: String
    /// The device handle: an APNs token lower-cased, other handles as given (FCM tokens and
    /// Web Push endpoints are case-sensitive).
    public var device: String
    public var notificationId: String
    /// The template that rendered it; empty for native sends.
    public var template: String
    /// The APNs payload.
    public var payload: String
    public var delivered: Date
    /// The send's tag expression, when it had one.
    public var tags: String?
    /// A browser's keys, for Web Push (never stored).
    public var webPushKeys: WebPushKeys?

    public init(
        seq: Int64, hub: String, device: String, notificationId: String, template: String, payload: String, delivered: Date,
        tags: String?, webPushKeys: WebPushKeys? = nil
    ) {
        self.webPushKeys = webPushKeys
        self.seq = seq
        self.hub = hub
        self.device = device
        self.notificationId = notificationId
        self.template = template
        self.payload = payload
        self.delivered = delivered
        self.tags = tags
    }
}

extension Delivery {
    /// The delivery as the built-in push service shows it.
    public func builtInPushDelivery(epoch: String) -> BuiltInPushDelivery {
        BuiltInPushDelivery(
            seq: seq, notificationId: notificationId, hub: hub, device: device, template: template.isEmpty ? nil : template,
            tags: tags,
            deliveredAt: W3CDate.format(delivered), payload: (try? JSONValue(parsing: payload)) ?? .string(payload), epoch: epoch)
    }
}

extension Delivery {
    /// What this delivery's frame shares with the other deliveries of its notification
    /// through its template (`BuiltInPushDelivery.FrameShape`).
    public func frameShape(epoch: String) -> BuiltInPushDelivery.FrameShape {
        BuiltInPushDelivery.FrameShape(
            notificationId: notificationId, hub: hub, template: template.isEmpty ? nil : template, tags: tags,
            deliveredAt: W3CDate.format(delivered), payloadJSON: payload, epoch: epoch)
    }

    /// The Server-Sent Events frame of this delivery, as `builtInPushDelivery(epoch:)` would
    /// write it, from the stored compact payload.
    public func serverSentEvent(epoch: String) -> String {
        frameShape(epoch: epoch).frame(seq: seq, device: device)
    }

    /// Whether this delivery's frame has the shape of `other`'s: same notification, template
    /// and payload, delivered at the same time.
    func sharesFrameShape(with other: Delivery) -> Bool {
        notificationId == other.notificationId && template == other.template && hub == other.hub && tags == other.tags
            && delivered == other.delivered && payload == other.payload
    }
}
