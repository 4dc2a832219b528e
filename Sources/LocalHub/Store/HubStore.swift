import Foundation
import NotificationHubs

/// Durable storage of a hub. Every method returns only once its writes are durable, but
/// `record` may leave a power loss (not a crash of the hub) to take its writes: the
/// notifications it finished are then still enqueued and are dispatched again at restart.
public protocol HubStore: Sendable {
    /// Installations and registrations, to rebuild the in-memory tables and tag index; rows
    /// that cannot be read are set aside and reported, never an error.
    func load() async throws -> HubSnapshot
    /// Applies mutations atomically, in order. A shared store returns the numbers its change
    /// log gave them, first through last (nil when they logged no change; always nil alone).
    @discardableResult
    func apply(_ mutations: [HubMutation]) async throws -> ClosedRange<Int64>?
    /// Writes deliveries (with the sequence numbers they carry) and final notification
    /// states atomically; returns the deliveries written (one already present is skipped).
    func record(_ dispatches: [DispatchRecord]) async throws -> [Delivery]
    /// The highest sequence number that may have been handed out: the larger of the last
    /// reservation and the last delivery written. Numbering resumes above it.
    func sequenceHighWater() async throws -> Int64
    /// Durably reserves sequence numbers up to `seq` before any of them is handed out; a
    /// reservation is never lowered.
    func reserveSequence(through seq: Int64) async throws
    /// Notifications accepted but not yet dispatched, oldest first.
    func unfinishedNotifications() async throws -> [StoredNotification]
    /// Notifications scheduled and neither fired nor cancelled.
    func scheduledNotifications() async throws -> [StoredNotification]
    func notification(hub: String, id: String) async throws -> StoredNotification?
    /// Deliveries to a device after `seq`, oldest first.
    func deliveries(hub: String, device: String, after seq: Int64, limit: Int) async throws -> [Delivery]
    /// Removes a device's deliveries; returns how many there were. A removed delivery
    /// recorded again is written again.
    func deleteDeliveries(hub: String, device: String) async throws -> Int
    /// Devices with deliveries, with their counts.
    func devices(hub: String) async throws -> [(device: String, count: Int)]
    /// Claims of the built-in push service last claimed or renewed before `before`, at most
    /// `limit`, oldest first.
    func staleClaims(before: Date, limit: Int) async throws -> [(hub: String, device: String)]
    /// Removes deliveries (and their payloads) made before `horizon`, and notifications that
    /// ended before it; then, while the delivery log takes more than `maximumLogBytes`, the
    /// deliveries of the devices holding the most, oldest first (`HolderEviction`), and, if
    /// that did not make it fit, the oldest deliveries. What a device lost is kept as its `gap`.
    func prune(before horizon: Date, maximumLogBytes: Int64) async throws -> PruneReport
    /// What retention took from a device, if anything.
    func gap(hub: String, device: String) async throws -> DeliveryGap?
    /// What a stream opened after `since` starts with: the device's gap, and its deliveries
    /// after both `since` and the gap, oldest first, at most `limit`.
    func backlog(hub: String, device: String, after since: Int64, limit: Int) async throws -> DeviceBacklog
    /// How much the store holds.
    func usage() async throws -> StoreUsage
    /// Gives the space freed by pruning back to the file system.
    func compact() async throws
    /// A value made when the store was created: sequence numbers compare only within it.
    func epoch() async throws -> String
}

extension HubStore {
    /// The gap, then the deliveries after it: two reads, which a local store answers at once.
    public func backlog(hub: String, device: String, after since: Int64, limit: Int) async throws -> DeviceBacklog {
        let gap = try await gap(hub: hub, device: device)
        let after = max(since, gap?.through ?? since)
        return DeviceBacklog(gap: gap, deliveries: try await deliveries(hub: hub, device: device, after: after, limit: limit))
    }
}
