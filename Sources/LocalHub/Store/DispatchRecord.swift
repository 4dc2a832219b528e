import Foundation
import NotificationHubs

/// The outcome of dispatching one notification, written in one step.
public struct DispatchRecord: Sendable {
    public var notification: StoredNotification
    /// Deliveries to write; their `seq` is assigned by the store.
    public var deliveries: [Delivery]

    public init(notification: StoredNotification, deliveries: [Delivery]) {
        self.notification = notification
        self.deliveries = deliveries
    }
}
