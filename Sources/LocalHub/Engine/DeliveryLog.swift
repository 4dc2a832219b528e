import NotificationHubs

/// What the routes read of what the hub delivered: a device's deliveries in pages, the
/// devices that have some, a device's live stream. The store and the live streams stay
/// behind it, so no handler reaches into either.
public struct DeliveryLog: Sendable {
    let store: any HubStore
    let streams: DeviceStreams
    let coordination: any NodeCoordination
    /// The delivery log's epoch: sequence numbers compare only within it.
    public let epoch: String

    /// Where a device that read through `seq` of this epoch resumes: after `seq`, or from the
    /// start when `seq` is past every number this log has given. No hub gives such a point,
    /// but one whose log was numbered again from below it did (a PostgreSQL hub of an
    /// earlier version, after retention emptied its log): its terminals would wait after
    /// their old number for ever, so they read the log again, as in a new epoch, and dedupe.
    public func resumePoint(after seq: Int64) async throws -> Int64 {
        try await coordination.hasNumbered(through: seq) ? seq : 0
    }

    /// Deliveries to a device after `seq`, oldest first, at most `limit`.
    public func page(hub: String, device: String, after seq: Int64, limit: Int) async throws -> [Delivery] {
        try await store.deliveries(hub: hub, device: device, after: seq, limit: limit)
    }

    /// What a device resuming after `since` starts with: what it must be told retention
    /// removed (`BuiltInPushGap`, nil when it missed nothing), and its deliveries after both, at
    /// most `limit`.
    public func backlog(hub: String, device: String, since: Int64, limit: Int) async throws
        -> (gap: BuiltInPushGap?, deliveries: [Delivery])
    {
        let backlog = try await store.backlog(hub: hub, device: device, after: since, limit: limit)
        let gap = backlog.gap.flatMap {
            BuiltInPushGap.told(since: since, removedFrom: $0.from, through: $0.through, count: $0.count)
        }
        return (gap, backlog.deliveries)
    }

    /// Devices with deliveries, with their counts.
    public func devices(hub: String) async throws -> [(device: String, count: Int)] {
        try await store.devices(hub: hub)
    }

    /// Removes a device's deliveries; returns how many there were.
    public func erase(hub: String, device: String) async throws -> Int {
        try await store.deleteDeliveries(hub: hub, device: device)
    }

    /// Why a stream cannot be opened now for `client`, or nil when it can; `claimed`: the
    /// device is a terminal's (`DeviceStreams.reserve`).
    public func refusal(hub: String, device: String, client: String?, claimed: Bool) -> DeviceStreams.ListenRefusal? {
        streams.refusal(hub: hub, device: device, client: client, claimed: claimed)
    }

    /// Streams one device may have open, one client, and all devices together.
    public var maximumStreamsPerDevice: Int { streams.maximumPerDevice }
    public var maximumStreamsPerClient: Int { streams.maximumPerClient }
    public var maximumStreams: Int { streams.maximum }

    /// Starts following a device's deliveries with `sink`; `cancel` with the id when done.
    public func listen(
        hub: String, device: String, sink: any DeviceStreamSink, client: String? = nil, claimed: Bool = true,
        credential: StreamCredential? = nil
    ) throws(DeviceStreams.ListenRefusal) -> (id: Int, unrecorded: [Delivery]) {
        try streams.listen(hub: hub, device: device, sink: sink, client: client, claimed: claimed, credential: credential)
    }

    /// Events a stream may have waiting for its client before it is ended.
    public var streamBufferLimit: Int { streams.bufferLimit }

    public func cancel(hub: String, device: String, id: Int) {
        streams.cancel(hub: hub, device: device, id: id)
    }
}
