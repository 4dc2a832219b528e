import Synchronization

/// What an open device stream is handed.
public enum StreamEvent: Sendable {
    case delivery(Delivery)
    /// Time for a keep-alive comment (one ticker serves every stream).
    case keepAlive
}

/// Live listeners of device inboxes: each open stream gets every delivery to its device as
/// soon as it is durable, and a keep-alive tick while idle.
public final class DeviceStreams: Sendable {
    private struct Registry {
        var listeners: [String: [Int: AsyncStream<StreamEvent>.Continuation]] = [:]
        var nextId = 0
        var count = 0
        var closed = false
        /// Deliveries handed to live streams before their commit finished, by device: a
        /// stream that opens in between gets them from here, not from the database.
        var unrecorded: [String: [Delivery]] = [:]
    }

    private let registry = Mutex(Registry())

    public init() {}

    static func key(hub: String, device: String) -> String { hub.lowercased() + "/" + device.lowercased() }

    /// Starts listening to a device; call `cancel` with the id when done. `unrecorded` holds
    /// the device's deliveries already published but not yet in the database.
    public func listen(hub: String, device: String) -> (id: Int, events: AsyncStream<StreamEvent>, unrecorded: [Delivery]) {
        let (stream, continuation) = AsyncStream<StreamEvent>.makeStream(bufferingPolicy: .unbounded)
        let key = Self.key(hub: hub, device: device)
        let (id, unrecorded) = registry.withLock { registry -> (Int, [Delivery]) in
            if registry.closed {
                continuation.finish()
                return (0, [])
            }
            registry.nextId += 1
            registry.listeners[key, default: [:]][registry.nextId] = continuation
            registry.count += 1
            return (registry.nextId, registry.unrecorded[key] ?? [])
        }
        return (id, stream, unrecorded)
    }

    public func cancel(hub: String, device: String, id: Int) {
        let key = Self.key(hub: hub, device: device)
        let continuation = registry.withLock { registry -> AsyncStream<StreamEvent>.Continuation? in
            guard let continuation = registry.listeners[key]?.removeValue(forKey: id) else { return nil }
            if registry.listeners[key]?.isEmpty == true { registry.listeners[key] = nil }
            registry.count -= 1
            return continuation
        }
        continuation?.finish()
    }

    /// Hands deliveries to the listeners of their devices. With `recorded: false` they are
    /// also kept for streams that open before `markRecorded` is called for them.
    public func publish(_ deliveries: [Delivery], recorded: Bool = true) {
        guard !deliveries.isEmpty else { return }
        registry.withLock { registry in
            var hubKeys: [String: String] = [:]
            for delivery in deliveries {
                let hubKey = hubKeys[delivery.hub] ?? delivery.hub.lowercased()
                hubKeys[delivery.hub] = hubKey
                let key = hubKey + "/" + delivery.device
                if !recorded { registry.unrecorded[key, default: []].append(delivery) }
                guard let listeners = registry.listeners[key] else { continue }
                for continuation in listeners.values { continuation.yield(.delivery(delivery)) }
            }
        }
    }

    /// Forgets deliveries kept by `publish(_:recorded: false)`: they are in the database now.
    public func markRecorded(_ deliveries: [Delivery]) {
        guard !deliveries.isEmpty else { return }
        registry.withLock { registry in
            for delivery in deliveries {
                let key = Self.key(hub: delivery.hub, device: delivery.device)
                registry.unrecorded[key]?.removeAll { $0.seq == delivery.seq }
                if registry.unrecorded[key]?.isEmpty == true { registry.unrecorded[key] = nil }
            }
        }
    }

    /// Sends a keep-alive tick to every open stream.
    public func tick() {
        registry.withLock { registry in
            for listeners in registry.listeners.values {
                for continuation in listeners.values { continuation.yield(.keepAlive) }
            }
        }
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
            let all = registry.listeners.values.flatMap(\.values)
            registry.listeners = [:]
            registry.count = 0
            return all
        }
        for continuation in all { continuation.finish() }
    }

    /// Open streams.
    public var count: Int { registry.withLock { $0.count } }
}
