import Foundation
import NotificationHubs

/// A store that keeps everything in memory: for tests and throwaway hubs.
public actor MemoryHubStore: HubStore {
    private var installations: [String: Installation] = [:]
    private var installationHubs: [String: String] = [:]
    private var registrations: [String: StoredRegistration] = [:]
    private var notifications: [String: StoredNotification] = [:]
    private var notificationOrder: [String] = []
    private var deliveryLog: [Delivery] = []
    private var gaps: [String: DeliveryGap] = [:]
    private var deliverySeqs: Set<Int64> = []
    private var claimedDevices: [(hub: String, device: String, at: Date, secretDigest: String?)] = []

    /// The delivery log's counters, as the other stores keep them in one row.
    private struct Counters {
        /// The epoch, made with the store.
        let epoch = HubEpoch.make()
        /// The highest number reserved (`reserveSequence`): never lowered.
        var reserved: Int64 = 0
    }

    private var counters = Counters()

    public init() {}

    public func epoch() -> String { counters.epoch }

    public func sequenceHighWater() throws -> Int64 {
        let mark = max(counters.reserved, deliveryLog.map(\.seq).max() ?? 0, gaps.values.map(\.through).max() ?? 0)
        guard StoredRange.sequence.contains(mark) else {
            throw StoreFailure(description: "the delivery log's numbers reach \(mark), past 2^62", permanent: true)
        }
        return mark
    }

    public func reserveSequence(through seq: Int64) throws {
        guard StoredRange.sequence.contains(seq) else {
            throw StoreFailure(description: "delivery numbers through \(seq) would pass 2^62", permanent: true)
        }
        counters.reserved = max(counters.reserved, seq)
    }

    private func key(_ hub: String, _ id: String) -> String { "\(hub)\u{0}\(id)" }

    public func load() -> HubSnapshot {
        var snapshot = HubSnapshot()
        for (key, installation) in installations {
            snapshot.installations.append((installationHubs[key] ?? "", installation))
        }
        snapshot.registrations = Array(registrations.values)
        snapshot.claimedDevices = claimedDevices.map { ($0.hub, $0.device, $0.secretDigest) }
        return snapshot
    }

    @discardableResult
    public func apply(_ mutations: [HubMutation]) -> ClosedRange<Int64>? {
        for mutation in mutations {
            switch mutation {
            case .upsertInstallation(let hub, let installation):
                let k = key(hub, installation.installationId)
                installations[k] = installation
                installationHubs[k] = hub
            case .deleteInstallation(let hub, let id):
                installations[key(hub, id)] = nil
            case .upsertRegistration(let stored):
                registrations[key(stored.hub, stored.id)] = stored
            case .deleteRegistration(let hub, let id):
                registrations[key(hub, id)] = nil
            case .insertNotification(let notification):
                notifications[notification.id] = notification
                notificationOrder.append(notification.id)
            case .fireScheduled(let hub, let id):
                if notifications[id]?.hub == hub, notifications[id]?.state == .scheduled {
                    notifications[id]!.state = .enqueued
                }
            case .cancelScheduled(let hub, let id, let at):
                if notifications[id]?.hub == hub, notifications[id]?.state == .scheduled {
                    notifications[id]!.state = .cancelled
                    notifications[id]!.ended = at
                }
            case .beginDispatch(let hub, let id):
                if notifications[id]?.hub == hub { notifications[id]!.dispatchStarts += 1 }
            case .claimDevice(let hub, let device, let at, let digest):
                if let i = claimedDevices.firstIndex(where: { $0.hub == hub && $0.device == device }) {
                    claimedDevices[i].at = at
                    if claimedDevices[i].secretDigest == nil { claimedDevices[i].secretDigest = digest }
                } else {
                    claimedDevices.append((hub, device, at, digest))
                }
            case .releaseDevice(let hub, let device):
                claimedDevices.removeAll { $0.hub == hub && $0.device == device }
            case .forgetDevice(let hub, let device):
                _ = deleteDeliveries(hub: hub, device: device)
                gaps[key(hub, device)] = nil
            }
        }
        return nil
    }

    public func staleClaims(before: Date, limit: Int) -> [(hub: String, device: String)] {
        claimedDevices.filter { $0.at < before }.sorted { $0.at < $1.at }.prefix(limit).map { ($0.hub, $0.device) }
    }

    public func record(_ dispatches: [DispatchRecord]) -> [Delivery] {
        var written: [Delivery] = []
        for dispatch in dispatches {
            for delivery in dispatch.deliveries {
                guard deliverySeqs.insert(delivery.seq).inserted else { continue }
                deliveryLog.append(delivery)
                written.append(delivery)
            }
            notifications[dispatch.notification.id] = dispatch.notification
        }
        return written
    }

    public func unfinishedNotifications() -> [StoredNotification] {
        notificationOrder.compactMap { notifications[$0] }.filter { $0.state == .enqueued || $0.state == .processing }
    }

    public func scheduledNotifications() -> [StoredNotification] {
        notificationOrder.compactMap { notifications[$0] }.filter { $0.state == .scheduled }
    }

    public func notification(hub: String, id: String) -> StoredNotification? {
        notifications[id].flatMap { $0.hub == hub ? $0 : nil }
    }

    public func prune(before horizon: Date, maximumLogBytes: Int64) -> PruneReport {
        var report = PruneReport()
        var devices = Set<String>()
        // By age; then, over the cap, the largest holders' oldest; then, if it still does not
        // fit, the oldest.
        deliveryLog.sort { $0.seq < $1.seq }
        let young = deliveryLog.firstIndex { $0.delivered >= horizon } ?? deliveryLog.endIndex
        removeLog(Set(deliveryLog[..<young].map(\.seq)), devices: &devices, report: &report)
        for _ in 0..<HolderEviction.passes {
            let excess = logBytes(deliveryLog[...]) - maximumLogBytes
            guard excess > 0 else { break }
            removeLog(holderEvictions(excess: Double(excess)), devices: &devices, report: &report)
        }
        if logBytes(deliveryLog[...]) > maximumLogBytes {
            // The least cut that fits (what is kept only shrinks as the cut moves on).
            var (low, high) = (0, deliveryLog.endIndex)
            while low < high {
                let middle = (low + high) / 2
                if logBytes(deliveryLog[middle...]) > maximumLogBytes { low = middle + 1 } else { high = middle }
            }
            removeLog(Set(deliveryLog[..<low].map(\.seq)), devices: &devices, report: &report)
        }
        report.devices = devices.count
        let before = notificationOrder.count
        notificationOrder.removeAll { id in
            guard let n = notifications[id], let ended = n.ended, ended < horizon,
                ![.enqueued, .processing, .scheduled].contains(n.state)
            else { return false }
            notifications[id] = nil
            return true
        }
        report.notifications = before - notificationOrder.count
        return report
    }

    /// The numbers of the deliveries the largest holders give for `excess` bytes to go
    /// (`HolderEviction`), each device's oldest first.
    private func holderEvictions(excess: Double) -> Set<Int64> {
        var sharing: [String: Int64] = [:]
        for delivery in deliveryLog { sharing[Self.payloadKey(delivery), default: 0] += 1 }
        func charge(_ delivery: Delivery) -> Double {
            HolderEviction.charge(
                payloadBytes: Int64(delivery.payload.utf8.count), sharing: sharing[Self.payloadKey(delivery)] ?? 1)
        }
        var holdings: [String: Double] = [:]
        for delivery in deliveryLog { holdings[key(delivery.hub, delivery.device), default: 0] += charge(delivery) }
        let gives = HolderEviction.gives(holdings, excess: excess)
        var given: [String: Double] = [:]
        var seqs = Set<Int64>()
        for delivery in deliveryLog {
            let device = key(delivery.hub, delivery.device)
            guard let give = gives[device], given[device, default: 0] < give else { continue }
            given[device, default: 0] += charge(delivery)
            seqs.insert(delivery.seq)
        }
        return seqs
    }

    /// Removes the deliveries numbered `seqs`, noting each device's loss as its gap, and
    /// counts the payloads no delivery uses any more.
    private func removeLog(_ seqs: Set<Int64>, devices: inout Set<String>, report: inout PruneReport) {
        guard !seqs.isEmpty else { return }
        let payloadsBefore = Set(deliveryLog.map(Self.payloadKey)).count
        for delivery in deliveryLog where seqs.contains(delivery.seq) {
            let key = key(delivery.hub, delivery.device)
            devices.insert(key)
            var gap = gaps[key] ?? DeliveryGap(from: delivery.seq, through: delivery.seq, count: 0)
            gap.through = max(gap.through, delivery.seq)
            gap.count += 1
            gaps[key] = gap
        }
        deliveryLog.removeAll { seqs.contains($0.seq) }
        deliverySeqs.subtract(seqs)
        report.deliveries += seqs.count
        report.payloads += payloadsBefore - Set(deliveryLog.map(Self.payloadKey)).count
    }

    /// A payload as the log keeps it once: its notification, template and body.
    private static func payloadKey(_ delivery: Delivery) -> String {
        "\(delivery.notificationId)\u{0}\(delivery.template)\u{0}\(delivery.payload)"
    }

    /// What the log takes: each distinct payload of a notification once, and each delivery.
    private func logBytes(_ deliveries: ArraySlice<Delivery>) -> Int64 {
        var seen = Set<String>()
        var bytes: Int64 = 0
        for delivery in deliveries {
            if seen.insert(Self.payloadKey(delivery)).inserted {
                bytes += Int64(delivery.payload.utf8.count)
            }
            bytes += deliveryRowBytes
        }
        return bytes
    }

    public func gap(hub: String, device: String) -> DeliveryGap? { gaps[key(hub, device)] }

    public func usage() -> StoreUsage {
        let log = logBytes(deliveryLog[...])
        return StoreUsage(
            usedBytes: log, fileBytes: log, deliveryLogBytes: log, deliveries: Int64(deliveryLog.count),
            oldestDelivery: deliveryLog.map(\.delivered).min(), notifications: Int64(notifications.count))
    }

    public func compact() {}

    public func deliveries(hub: String, device: String, after seq: Int64, limit: Int) -> [Delivery] {
        Array(
            deliveryLog.filter { $0.hub == hub && $0.device == device && $0.seq > seq }.sorted { $0.seq < $1.seq }.prefix(limit))
    }

    public func deleteDeliveries(hub: String, device: String) -> Int {
        let gone = deliveryLog.filter { $0.hub == hub && $0.device == device }
        deliveryLog.removeAll { $0.hub == hub && $0.device == device }
        deliverySeqs.subtract(gone.map(\.seq))
        return gone.count
    }

    public func devices(hub: String) -> [(device: String, count: Int)] {
        var counts: [String: Int] = [:]
        for delivery in deliveryLog where delivery.hub == hub { counts[delivery.device, default: 0] += 1 }
        return counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}
