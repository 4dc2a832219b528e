import Foundation
import NotificationHubs

/// A notification the hub accepted.
public struct StoredNotification: Sendable, Hashable {
    public var hub: String
    public var id: String
    public var format: NotificationFormat
    /// The `ServiceBusNotification-Tags` expression, `nil` for a broadcast.
    public var tagExpression: String?
    public var body: String
    /// Headers passed to the push service (`apns-*`).
    public var headers: [String: String]
    /// The device handle of a direct send.
    public var directHandle: String?
    /// The device handles of a direct batch send (`DirectBatch`).
    public var batchHandles: [String]?
    public var isTest: Bool
    public var enqueued: Date
    public var state: NotificationDetails.State
    public var started: Date?
    public var ended: Date?
    /// Outcome name (`Success`, `InvalidNotificationSize`…) → count.
    public var outcomeCounts: [String: Int]
    /// The first devices' outcomes, kept for `explain` (`SendExplanation.lineLimit`).
    public var report: [SendExplanation.Line] = []
    /// When a scheduled notification is due (its state is `scheduled` until then).
    public var scheduledFor: Date?
    /// How many starts of a hub (or takeovers by a node) began its dispatch without finishing
    /// it: one begun at `HubDispatcher.mostStarts` is abandoned, never begun again.
    public var dispatchStarts = 0

    public init(
        hub: String, id: String, format: NotificationFormat, tagExpression: String?, body: String,
        headers: [String: String] = [:],
        directHandle: String? = nil, isTest: Bool = false, enqueued: Date = Date()
    ) {
        self.hub = hub
        self.id = id
        self.format = format
        self.tagExpression = tagExpression
        self.body = body
        self.headers = headers
        self.directHandle = directHandle
        self.isTest = isTest
        self.enqueued = enqueued
        self.state = .enqueued
        self.outcomeCounts = [:]
    }
}

extension StoredNotification {
    /// A direct browser send's keys, from its `P256DH` and `Auth` headers.
    public var webPushKeys: WebPushKeys? {
        guard let p256dh = headers["p256dh"], let auth = headers["auth"] else { return nil }
        return WebPushKeys(p256dh: p256dh, auth: auth)
    }
}
