import Foundation

/// What retention removed in one pass.
public struct PruneReport: Sendable, Equatable {
    public var deliveries = 0
    public var payloads = 0
    public var notifications = 0
    /// Devices that lost deliveries (and are told of the gap when they come back).
    public var devices = 0
    public init() {}
}

/// What a stream starts with (`HubStore.backlog`).
public struct DeviceBacklog: Sendable, Equatable {
    public var gap: DeliveryGap?
    public var deliveries: [Delivery]

    public init(gap: DeliveryGap?, deliveries: [Delivery]) {
        self.gap = gap
        self.deliveries = deliveries
    }
}

/// What retention took from one device: its deliveries numbered `from...through`, `count` of
/// them. A device that resumes from before `through` is told.
public struct DeliveryGap: Sendable, Equatable {
    public var from: Int64
    public var through: Int64
    public var count: Int

    public init(from: Int64, through: Int64, count: Int) {
        self.from = from
        self.through = through
        self.count = count
    }
}

/// How much a store holds.
public struct StoreUsage: Sendable, Equatable {
    /// Bytes the store's data takes (free pages not counted).
    public var usedBytes: Int64
    /// Bytes the file (or database) takes on disk, free space included.
    public var fileBytes: Int64
    /// About what the delivery log takes: its payloads and deliveries.
    public var deliveryLogBytes: Int64
    public var deliveries: Int64
    /// When the oldest delivery kept was made, if any.
    public var oldestDelivery: Date?
    public var notifications: Int64

    public init(
        usedBytes: Int64, fileBytes: Int64, deliveryLogBytes: Int64, deliveries: Int64, oldestDelivery: Date?,
        notifications: Int64
    ) {
        self.usedBytes = usedBytes
        self.fileBytes = fileBytes
        self.deliveryLogBytes = deliveryLogBytes
        self.deliveries = deliveries
        self.oldestDelivery = oldestDelivery
        self.notifications = notifications
    }
}

/// About what one delivery takes in the log besides its payload, for the byte cap.
let deliveryRowBytes: Int64 = 30
