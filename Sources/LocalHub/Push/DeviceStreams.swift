import Synchronization

/// What an open device stream is handed.
public enum StreamEvent: Sendable {
    case delivery(Delivery)
    /// Time for a keep-alive comment (one ticker serves every stream).
    case keepAlive
}

/// Live listeners of device inboxes: each open stream gets every delivery to its device as
/// soon as it is durable, and a keep-alive tick while idle.
///
/// Nothing here grows without bound. A stream whose client stops reading has at most
/// `bufferLimit` events waiting; past that it is ended, and its client resumes from the
/// database with `Last-Event-ID`, losing nothing. An ended stream still counts against the
/// limits until `cancel`: its connection is held while what it buffered is written. Deliveries published before their commit
/// are kept only until `markRecorded`, which forgets a whole batch in one pass.
public final class DeviceStreams: Sendable {
    private struct Listener {
        let continuation: AsyncStream<StreamEvent>.Continuation
        /// Finished for falling behind, not yet cancelled by its writer.
        var ended = false
    }

    private struct Registry {
        var listeners: [String: [Int: Listener]] = [:]
        var nextId = 0
        var count = 0
        var closed = false
        /// Deliveries handed to live streams before their commit finished, by device: a
        /// stream that opens in between gets them from here, not from the database.
        var unrecorded: [String: [Delivery]] = [:]

        /// Removes one listener; returns its continuation to finish outside the lock.
        mutating func remove(key: String, id: Int) -> AsyncStream<StreamEvent>.Continuation? {
            guard let listener = listeners[key]?.removeValue(forKey: id) else { return nil }
            if listeners[key]?.isEmpty == true { listeners[key] = nil }
            count -= 1
            return listener.continuation
        }

        /// Hands `event` to every live listener of `key`; those that cannot take it are
        /// marked ended and returned, to finish outside the lock.
        mutating func yield(_ event: StreamEvent, to key: String, overflowed: inout [AsyncStream<StreamEvent>.Continuation]) {
            guard let all = listeners[key] else { return }
            for (id, listener) in all where !listener.ended {
                if case .dropped = listener.continuation.yield(event) {
                    listeners[key]?[id]?.ended = true
                    overflowed.append(listener.continuation)
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

    /// Starts listening to a device; call `cancel` with the id when done. `unrecorded` holds
    /// the device's deliveries already published but not yet in the database.
    public func listen(hub: String, device: String) throws(ListenRefusal) -> (
        id: Int, events: AsyncStream<StreamEvent>, unrecorded: [Delivery]
    ) {
        let (stream, continuation) = AsyncStream<StreamEvent>.makeStream(bufferingPolicy: .bufferingOldest(bufferLimit))
        let key = Self.key(hub: hub, device: device)
        let result = registry.withLock { registry -> Result<(Int, [Delivery]), ListenRefusal> in
            if registry.closed { return .failure(.closed) }
            if registry.listeners[key, default: [:]].count >= maximumPerDevice { return .failure(.tooManyStreams) }
            if registry.count >= maximum { return .failure(.full) }
            registry.nextId += 1
            registry.listeners[key, default: [:]][registry.nextId] = Listener(continuation: continuation)
            registry.count += 1
            return .success((registry.nextId, registry.unrecorded[key] ?? []))
        }
        switch result {
        case .success(let (id, unrecorded)):
            return (id, stream, unrecorded)
        case .failure(let refusal):
            continuation.finish()
            throw refusal
        }
    }

    /// Streams open now for one device.
    public func openCount(hub: String, device: String) -> Int {
        let key = Self.key(hub: hub, device: device)
        return registry.withLock { $0.listeners[key]?.count ?? 0 }
    }

    public func cancel(hub: String, device: String, id: Int) {
        let key = Self.key(hub: hub, device: device)
        let continuation = registry.withLock { registry in registry.remove(key: key, id: id) }
        continuation?.finish()
    }

    /// Hands deliveries to the listeners of their devices. With `recorded: false` they are
    /// also kept for streams that open before `markRecorded` is called for them. A listener
    /// whose buffer is full is ended.
    public func publish(_ deliveries: [Delivery], recorded: Bool = true) {
        guard !deliveries.isEmpty else { return }
        let overflowed = registry.withLock { registry -> [AsyncStream<StreamEvent>.Continuation] in
            var overflowed: [AsyncStream<StreamEvent>.Continuation] = []
            var hubKeys: [String: String] = [:]
            for delivery in deliveries {
                let hubKey = hubKeys[delivery.hub] ?? delivery.hub.lowercased()
                hubKeys[delivery.hub] = hubKey
                let key = hubKey + "/" + delivery.device
                if !recorded { registry.unrecorded[key, default: []].append(delivery) }
                registry.yield(.delivery(delivery), to: key, overflowed: &overflowed)
            }
            return overflowed
        }
        for continuation in overflowed { continuation.finish() }
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

    /// Sends a keep-alive tick to every open stream; a stream that cannot take it is ended.
    public func tick() {
        let overflowed = registry.withLock { registry -> [AsyncStream<StreamEvent>.Continuation] in
            var overflowed: [AsyncStream<StreamEvent>.Continuation] = []
            for key in registry.listeners.keys {
                registry.yield(.keepAlive, to: key, overflowed: &overflowed)
            }
            return overflowed
        }
        for continuation in overflowed { continuation.finish() }
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
        let all = registry.withLock { registry -> [AsyncStream<StreamEvent>.Continuation] in
            registry.closed = true
            let all = registry.listeners.values.flatMap(\.values).map(\.continuation)
            registry.listeners = [:]
            registry.count = 0
            return all
        }
        for continuation in all { continuation.finish() }
    }

    /// Open streams.
    public var count: Int { registry.withLock { $0.count } }

    /// Whether the hub is shutting down and takes no new stream.
    public var isClosed: Bool { registry.withLock { $0.closed } }

    /// Deliveries kept until their commit, for tests.
    var unrecordedCount: Int { registry.withLock { $0.unrecorded.values.reduce(0) { $0 + $1.count } } }
}
