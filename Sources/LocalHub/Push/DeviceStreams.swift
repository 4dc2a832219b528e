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
        var listeners: [String: [Int: any DeviceStreamSink]] = [:]
        var nextId = 0
        var count = 0
        var closed = false
        /// Deliveries handed to live streams before their commit finished, by device: a
        /// stream that opens in between gets them from here, not from the database.
        var unrecorded: [String: [Delivery]] = [:]

        /// Removes one listener.
        mutating func remove(key: String, id: Int) -> (any DeviceStreamSink)? {
            guard let sink = listeners[key]?.removeValue(forKey: id) else { return nil }
            if listeners[key]?.isEmpty == true { listeners[key] = nil }
            count -= 1
            return sink
        }

        /// Adds `event` for every listener of `key` to the jobs of their loops.
        func collect(_ event: StreamEvent, for key: String, into jobs: inout Jobs) {
            guard let sinks = listeners[key] else { return }
            for sink in sinks.values { jobs.add(event, for: sink) }
        }
    }

    /// Events gathered per event loop, handed over one job per loop.
    private struct Jobs {
        var byLoop: [ObjectIdentifier: (loop: any EventLoop, items: [(any DeviceStreamSink, StreamEvent)])] = [:]

        mutating func add(_ event: StreamEvent, for sink: any DeviceStreamSink) {
            let loop = sink.eventLoop
            byLoop[ObjectIdentifier(loop), default: (loop, [])].items.append((sink, event))
        }

        /// Runs each loop's job: its sinks take their events in order, each flushing right
        /// after its last one, so the first streams are on their way while later ones are
        /// still being written.
        func run() {
            for (loop, items) in byLoop.values {
                loop.execute {
                    var lastEvent: [ObjectIdentifier: Int] = [:]
                    lastEvent.reserveCapacity(items.count)
                    for (index, (sink, _)) in items.enumerated() { lastEvent[ObjectIdentifier(sink)] = index }
                    for (index, (sink, event)) in items.enumerated() {
                        sink.receive(event)
                        if lastEvent[ObjectIdentifier(sink)] == index { sink.flush() }
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

    public init(maximumPerDevice: Int = 16, maximum: Int = .max, bufferLimit: Int = 1024) {
        self.maximumPerDevice = maximumPerDevice
        self.maximum = maximum
        self.bufferLimit = bufferLimit
    }

    static func key(hub: String, device: String) -> String { hub.lowercased() + "/" + device.lowercased() }

    /// A stream that could not be opened.
    public enum ListenRefusal: Error, Sendable {
        /// The device has `maximumPerDevice` streams open.
        case tooManyStreams
        /// `maximum` streams are open.
        case full
        /// The hub is shutting down.
        case closed
    }

    /// Starts listening to a device with `sink`; call `cancel` with the id when done.
    /// `unrecorded` holds the device's deliveries already published but not yet in the
    /// database.
    public func listen(hub: String, device: String, sink: any DeviceStreamSink) throws(ListenRefusal) -> (
        id: Int, unrecorded: [Delivery]
    ) {
        let key = Self.key(hub: hub, device: device)
        let result = registry.withLock { registry -> Result<(Int, [Delivery]), ListenRefusal> in
            if registry.closed { return .failure(.closed) }
            if registry.listeners[key, default: [:]].count >= maximumPerDevice { return .failure(.tooManyStreams) }
            if registry.count >= maximum { return .failure(.full) }
            registry.nextId += 1
            registry.listeners[key, default: [:]][registry.nextId] = sink
            registry.count += 1
            return .success((registry.nextId, registry.unrecorded[key] ?? []))
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

    /// Streams open now for one device.
    public func openCount(hub: String, device: String) -> Int {
        let key = Self.key(hub: hub, device: device)
        return registry.withLock { $0.listeners[key]?.count ?? 0 }
    }

    /// Stops listening; the sink is ended (its reader, if any, sees the end).
    public func cancel(hub: String, device: String, id: Int) {
        let key = Self.key(hub: hub, device: device)
        registry.withLock { registry in registry.remove(key: key, id: id) }?.end()
    }

    /// Hands deliveries to the listeners of their devices. With `recorded: false` they are
    /// also kept for streams that open before `markRecorded` is called for them.
    public func publish(_ deliveries: [Delivery], recorded: Bool = true) {
        guard !deliveries.isEmpty else { return }
        let jobs = registry.withLock { registry -> Jobs in
            var jobs = Jobs()
            var hubKeys: [String: String] = [:]
            for delivery in deliveries {
                let hubKey = hubKeys[delivery.hub] ?? delivery.hub.lowercased()
                hubKeys[delivery.hub] = hubKey
                let key = hubKey + "/" + delivery.device
                if !recorded { registry.unrecorded[key, default: []].append(delivery) }
                registry.collect(.delivery(delivery), for: key, into: &jobs)
            }
            return jobs
        }
        jobs.run()
    }

    /// Forgets deliveries kept by `publish(_:recorded: false)`: they are in the database now.
    /// Deliveries are kept per device in the order they were published, so each device's
    /// share of the batch is a prefix, dropped at once.
    public func markRecorded(_ deliveries: [Delivery]) {
        guard !deliveries.isEmpty else { return }
        var newest: [String: Int64] = [:]
        for delivery in deliveries {
            let key = Self.key(hub: delivery.hub, device: delivery.device)
            newest[key] = max(newest[key] ?? .min, delivery.seq)
        }
        registry.withLock { registry in
            for (key, seq) in newest {
                guard let kept = registry.unrecorded[key] else { continue }
                let done = kept.prefix { $0.seq <= seq }.count
                registry.unrecorded[key] = done == kept.count ? nil : Array(kept.dropFirst(done))
            }
        }
    }

    /// Sends a keep-alive tick to every open stream.
    public func tick() {
        let jobs = registry.withLock { registry -> Jobs in
            var jobs = Jobs()
            for key in registry.listeners.keys { registry.collect(.keepAlive, for: key, into: &jobs) }
            return jobs
        }
        jobs.run()
    }

    /// Ticks every `seconds` until cancelled.
    public func runKeepAlive(every seconds: Double) async {
        while !Task.isCancelled {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            if Task.isCancelled { return }
            tick()
        }
    }

    /// Ends every open stream and refuses new ones (the hub is shutting down).
    public func closeAll() {
        let all = registry.withLock { registry -> [any DeviceStreamSink] in
            registry.closed = true
            let all = registry.listeners.values.flatMap(\.values)
            registry.listeners = [:]
            registry.count = 0
            return all
        }
        for sink in all { sink.end() }
    }

    /// Open streams.
    public var count: Int { registry.withLock { $0.count } }

    /// Whether the hub is shutting down and takes no new stream.
    public var isClosed: Bool { registry.withLock { $0.closed } }

    /// Deliveries kept until their commit, for tests.
    var unrecordedCount: Int { registry.withLock { $0.unrecorded.values.reduce(0) { $0 + $1.count } } }
}
