import Foundation
import NotificationHubs

/// A registration as the hub keeps it.
public struct StoredRegistration: Sendable, Hashable {
    public var hub: String
    /// The registration; its `registrationId` and `etag` are always set.
    public var registration: Registration
    public var created: Date
    public var updated: Date

    public var id: String { registration.registrationId ?? "" }

    public init(hub: String, registration: Registration, created: Date, updated: Date) {
        self.hub = hub
        self.registration = registration
        self.created = created
        self.updated = updated
    }
}
