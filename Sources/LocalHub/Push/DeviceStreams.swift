import NIOCore
import Synchronization

/// Live listeners of device inboxes: each open stream gets every delivery to its device as
/// soon as it is published, and a keep-alive tick while idle. Listeners are sinks that live
/// on an event loop: one publish hands each loop one job holding the events of all its
/// sinks, which write them there (for HTTP streams, straight into their channels).
///
/// Nothing here grows without bound. A sink whose client stops reading ends its stream once
/// `bufferLimit` events wait for the client, and the client resumes from the database with
/// `Last-Event-ID`, losing nothing. An ended stream still counts against the limits until
/// `cancel`: its connection is held while what it buffered is written. Deliveries published
/// before their commit are kept only until `markRecorded`, which forgets a whole batch in
/// one pass.
public final class DeviceStreams: Sendable {
    private struct Registry {
        /// Listeners by lower-cased hub, then lower-cased device.
        var listeners: [String: [String: [Int: any DeviceStreamSink]]] = [:]
        var nextId = 0
        var count = 0
        /// Streams open by client, and each listener's client (when it has one).
        var byClient: [String: Int] = [:]
        var clientOf: [Int: String] = [:]
        /// The key each stream was opened with, and where it listens: a stream whose key is
        /// regenerated or removed is closed (`closeStreams(signedWithKeysNotIn:)`).
        var credentialOf: [Int: (credential: StreamCredential, hub: String, device: String)] = [:]
        var closed = false
        /// Deliveries handed to live streams before their commit finished, batch by batch in
        /// the order published: a stream that opens in between gets them from here, not from
        /// the database.
        var unrecorded: [UnrecordedBatch] = []

        /// Removes one listener.
        mutating func remove(hub: String, device: String, id: Int) -> (any DeviceStreamSink)? {
            // Taken out to be changed in place, and put back unless emptied.
            guard var devices = listeners.removeValue(forKey: hub) else { return nil }
            defer { if !devices.isEmpty { listeners[hub] = devices } }
            guard var sinks = devices.removeValue(forKey: device) else { return nil }
            defer { if !sinks.isEmpty { devices[device] = sinks } }
            guard let sink = sinks.removeValue(forKey: id) else { return nil }
            count -= 1
            credentialOf[id] = nil
            if let client = clientOf.removeValue(forKey: id) {
                let left = (byClient[client] ?? 1) - 1
                byClient[client] = left > 0 ? left : nil
            }
            return sink
        }
    }

    /// One published batch awaiting its commit. Kept whole, as published (no work per
    /// delivery); indexed by device only when a stream opens while it waits, which is rare.
    private struct UnrecordedBatch {
        let deliveries: [Delivery]
        /// The batch's lowest and highest sequence numbers.
        let oldest: Int64
        let newest: Int64
        /// By lower-cased hub, then device: each device's deliveries in published order.
        private var index: [String: [String: [Delivery]]]?

        init(_ deliveries: [Delivery]) {
            self.deliveries = deliveries
            oldest = deliveries.lazy.map(\.seq).min() ?? .max
            newest = deliveries.lazy.map(\.seq).max() ?? .min
        }

        mutating func deliveries(hub: String, device: String) -> [Delivery] {
            if index == nil {
                var built: [String: [String: [Delivery]]] = [:]
                var start = deliveries.startIndex
                while start < deliveries.endIndex {
                    // One run of deliveries to one hub, indexed in a table changed in place.
                    let hub = deliveries[start].hub
                    let end = deliveries[start...].firstIndex { $0.hub != hub } ?? deliveries.endIndex
                    var devices = built.removeValue(forKey: hub.lowercased()) ?? [:]
                    for delivery in deliveries[start..<end] { devices[delivery.device, default: []].append(delivery) }
                    built[hub.lowercased()] = devices
                    start = end
                }
                index = built
            }
            return index?[hub]?[device] ?? []
        }
    }

    /// Events gathered per event loop, handed over one job per loop. An item names its
    /// delivery by position in the published batch (copied out on the loop), or -1 for a
    /// keep-alive: gathering costs no copy of a delivery.
    private struct Jobs {
        struct Job {
            let loop: any EventLoop
            /// Each event's sink, delivery and whether it is that sink's last of the job.
            var items: [(sink: any DeviceStreamSink, delivery: Int, flush: Bool)] = []
        }
        /// The published batch the items point into.
        let deliveries: [Delivery]
        var jobs: [Job] = []
        var jobOfLoop: [ObjectIdentifier: Int] = [:]
        /// Where each sink's latest event is (job, item), to move its flush to a later one.
        var latest: [ObjectIdentifier: (Int, Int)] = [:]
        /// Events expected in all, to size each job once.
        let capacity: Int

        /// Whether each sink takes one event at most (a keep-alive tick): no sink's flush
        /// then needs moving, and `latest` stays empty.
        let oneEventPerSink: Bool

        init(deliveries: [Delivery], capacity: Int, oneEventPerSink: Bool = false) {
            self.deliveries = deliveries
            self.capacity = capacity
            self.oneEventPerSink = oneEventPerSink
        }

        /// Adds the delivery at `delivery` of the batch, or a keep-alive (-1), for `sink`.
        mutating func add(_ delivery: Int, for sink: any DeviceStreamSink) {
            let loop = sink.eventLoop
            let j: Int
            if let known = jobOfLoop[ObjectIdentifier(loop)] {
                j = known
            } else {
                j = jobs.count
                jobOfLoop[ObjectIdentifier(loop)] = j
                jobs.append(Job(loop: loop))
                jobs[j].items.reserveCapacity(min(capacity, 1024))
            }
            if !oneEventPerSink {
                if latest.isEmpty { latest.reserveCapacity(min(capacity, 4096)) }
                if let (pj, pi) = latest.updateValue((j, jobs[j].items.count), forKey: ObjectIdentifier(sink)) {
                    jobs[pj].items[pi].flush = false
                }
            }
            jobs[j].items.append((sink, delivery, true))
        }

        /// Runs each loop's job: its sinks take their events in order, each flushing right
        /// after its last one, so the first streams are on their way while later ones are
        /// still being written. Each future succeeds when its loop's job is done.
        func run() -> [EventLoopFuture<Void>] {
            let deliveries = deliveries
            return jobs.map { job in
                let items = job.items
                return job.loop.submit {
                    var shapes = FrameShapes()
                    for (sink, delivery, flush) in items {
                        sink.receive(delivery < 0 ? .keepAlive : .delivery(deliveries[delivery]), shapes: &shapes)
                        if flush { sink.flush() }
                    }
                }
            }
        }
    }

    private let registry = Mutex(Registry())
    /// Streams one device may have open at once.
    public let maximumPerDevice: Int
    /// Streams open at once in all: fewer than the connections the server takes, so that
    /// streams (which never time out) cannot hold every connection.
    public let maximum: Int
    /// Events one stream may have waiting for its client.
    public let bufferLimit: Int
    /// Streams one client may have open at once; 0: no limit.
    public let maximumPerClient: Int
    /// The last streams of `maximum`, kept for devices claimed for the built-in push service
    /// (terminals): a device known only from an installation cannot take them.
    public var reserve: Int { maximum == .max ? 0 : maximum / 4 }

    public init(maximumPerDevice: Int = 16, maximum: Int = .max, bufferLimit: Int = 1024, maximumPerClient: Int = 0) {
        self.maximumPerDevice = maximumPerDevice
        self.maximum = maximum
        self.bufferLimit = bufferLimit
        self.maximumPerClient = maximumPerClient
    }

    /// A stream that could not be opened.
    public enum ListenRefusal: Error, Sendable {
        /// The device has `maximumPerDevice` streams open.
        case tooManyStreams
        /// The client has `maximumPerClient` streams open.
        case clientLimit
        /// `maximum` streams are open (or all but the `reserve`, for a device not claimed).
        case full
        /// The hub is shutting down.
        case closed
    }

    /// Starts listening to a device with `sink`; call `cancel` with the id when done.
    /// `unrecorded` holds the device's deliveries already published but not yet in the
    /// database.
    /// `client`: who opens it, counted against `maximumPerClient` (nil: nobody's, inside the
    /// process); `claimed`: whether the device is a terminal's, which may use the `reserve`.
    /// `credential`: the key the stream was opened with, when a token opened it.
    public func listen(
        hub: String, device: String, sink: any DeviceStreamSink, client: String? = nil, claimed: Bool = true,
        credential: StreamCredential? = nil
    ) throws(ListenRefusal) -> (id: Int, unrecorded: [Delivery]) {
        let (hub, device) = (hub.lowercased(), device.lowercased())
        let result = registry.withLock { registry -> Result<(Int, [Delivery]), ListenRefusal> in
            if let refusal = refusal(registry, hub: hub, device: device, client: client, claimed: claimed) {
                return .failure(refusal)
            }
            registry.nextId += 1
            var devices = registry.listeners.removeValue(forKey: hub) ?? [:]
            devices[device, default: [:]][registry.nextId] = sink
            registry.listeners[hub] = devices
            registry.count += 1
            if let client {
                registry.byClient[client, default: 0] += 1
                registry.clientOf[registry.nextId] = client
            }
            if let credential { registry.credentialOf[registry.nextId] = (credential, hub, device) }
            var unrecorded: [Delivery] = []
            for b in registry.unrecorded.indices { unrecorded += registry.unrecorded[b].deliveries(hub: hub, device: device) }
            return .success((registry.nextId, unrecorded))
        }
        switch result {
        case .success(let (id, unrecorded)): return (id, unrecorded)
        case .failure(let refusal): throw refusal
        }
    }

    /// Starts listening to a device with a `BufferedStreamSink` of `bufferLimit` events, read
    /// as an async sequence (listeners inside the process; tests).
    public func listen(hub: String, device: String) throws(ListenRefusal) -> (
        id: Int, events: AsyncStream<StreamEvent>, unrecorded: [Delivery]
    ) {
        let sink = BufferedStreamSink(limit: bufferLimit)
        do {
            let (id, unrecorded) = try listen(hub: hub, device: device, sink: sink)
            return (id, sink.events, unrecorded)
        } catch {
            sink.end()
            throw error
        }
    }

    /// Why a stream could not be opened now, or nil when it could.
    public func refusal(hub: String, device: String, client: String?, claimed: Bool) -> ListenRefusal? {
        let (hub, device) = (hub.lowercased(), device.lowercased())
        return registry.withLock { refusal($0, hub: hub, device: device, client: client, claimed: claimed) }
    }

    private func refusal(_ registry: Registry, hub: String, device: String, client: String?, claimed: Bool)
        -> ListenRefusal?
    {
        if registry.closed { return .closed }
        if registry.listeners[hub]?[device]?.count ?? 0 >= maximumPerDevice { return .tooManyStreams }
        if let client, maximumPerClient > 0, registry.byClient[client] ?? 0 >= maximumPerClient { return .clientLimit }
        if registry.count >= (claimed ? maximum : maximum - reserve) { return .full }
        return nil
    }

    /// Streams open now for one device.
    public func openCount(hub: String, device: String) -> Int {
        let (hub, device) = (hub.lowercased(), device.lowercased())
        return registry.withLock { $0.listeners[hub]?[device]?.count ?? 0 }
    }

    /// Stops listening; the sink is ended (its reader, if any, sees the end).
    public func cancel(hub: String, device: String, id: Int) {
        let (hub, device) = (hub.lowercased(), device.lowercased())
        registry.withLock { registry in registry.remove(hub: hub, device: device, id: id) }?.end()
    }

    /// Hands deliveries to the listeners of their devices; each future succeeds once a loop
    /// has written its share. With `recorded: false` they are also kept for streams that
    /// open before `markRecorded` is called for them. Deliveries carry lower-cased devices.
    @discardableResult
    public func publish(_ deliveries: [Delivery], recorded: Bool = true) -> [EventLoopFuture<Void>] {
        guard !deliveries.isEmpty else { return [] }
        let jobs = registry.withLock { registry -> Jobs in
            if !recorded { registry.unrecorded.append(UnrecordedBatch(deliveries)) }
            var jobs = Jobs(deliveries: deliveries, capacity: deliveries.count)
            // Deliveries come in runs of one hub: its listeners are looked up once per run.
            var hub: String?
            var listeners: [String: [Int: any DeviceStreamSink]] = [:]
            for (index, delivery) in deliveries.enumerated() {
                if delivery.hub != hub {
                    hub = delivery.hub
                    listeners = registry.listeners[delivery.hub.lowercased()] ?? [:]
                }
                guard let sinks = listeners[delivery.device] else { continue }
                for sink in sinks.values { jobs.add(index, for: sink) }
            }
            return jobs
        }
        return jobs.run()
    }

    /// Forgets the batches published with `publish(_:recorded: false)` that are in the
    /// database now: `deliveries` are whole batches as published (the dispatcher records
    /// what it published, batch by batch), and a batch is forgotten when its numbers lie
    /// within theirs. A batch numbered outside them, before or after, is kept.
    public func markRecorded(_ deliveries: [Delivery]) {
        guard let oldest = deliveries.lazy.map(\.seq).min(), let newest = deliveries.lazy.map(\.seq).max() else { return }
        registry.withLock { registry in registry.unrecorded.removeAll { $0.oldest >= oldest && $0.newest <= newest } }
    }

    /// Sends a keep-alive tick to every open stream.
    public func tick() {
        let jobs = registry.withLock { registry -> Jobs in
            var jobs = Jobs(deliveries: [], capacity: registry.count, oneEventPerSink: true)
            for devices in registry.listeners.values {
                for sinks in devices.values {
                    for sink in sinks.values { jobs.add(-1, for: sink) }
                }
            }
            return jobs
        }
        _ = jobs.run()
    }

    /// Ticks every `interval` until cancelled.
    public func runKeepAlive(every interval: Duration) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if Task.isCancelled { return }
            tick()
        }
    }

    /// Ends the streams opened with a key that `isValid` no longer takes (regenerated, or its
    /// rule removed); returns how many. Their clients see the stream end and open it again
    /// with a key that works, or get 401.
    @discardableResult
    public func closeStreams(signedWithKeysNotIn isValid: (StreamCredential) -> Bool) -> Int {
        let ended = registry.withLock { registry -> [any DeviceStreamSink] in
            let stale = registry.credentialOf.filter { !isValid($0.value.credential) }
            return stale.compactMap { id, held in registry.remove(hub: held.hub, device: held.device, id: id) }
        }
        for sink in ended { sink.end() }
        return ended.count
    }

    /// Ends every open stream and refuses new ones (the hub is shutting down).
    public func closeAll() {
        let all = registry.withLock { registry -> [any DeviceStreamSink] in
            registry.closed = true
            let all = registry.listeners.values.flatMap { $0.values.flatMap(\.values) }
            registry.listeners = [:]
            registry.count = 0
            registry.byClient = [:]
            registry.clientOf = [:]
            registry.credentialOf = [:]
            return all
        }
        for sink in all { sink.end() }
    }

    /// Open streams.
    public var count: Int { registry.withLock { $0.count } }

    /// Whether the hub is shutting down and takes no new stream.
    public var isClosed: Bool { registry.withLock { $0.closed } }
}

/// The key a stream was opened with: the hub and rule, the key itself (primary or
/// secondary) that signed the token, and the token's expiry (`se`), when the stream ends.
public struct StreamCredential: Sendable, Hashable {
    public var hub: String
    public var rule: String
    public var key: String
    /// `se`, Unix seconds; nil for none.
    public var expiry: Double?

    public init(hub: String, rule: String, key: String, expiry: Double? = nil) {
        self.hub = hub
        self.rule = rule
        self.key = key
        self.expiry = expiry
    }
}
