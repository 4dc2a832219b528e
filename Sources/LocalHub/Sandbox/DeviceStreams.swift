import Synchronization

/// Live listeners of device inboxes: each open stream gets every delivery to its device as
/// soon as it is durable.
public final class DeviceStreams: Sendable {
    private struct Registry {
        var listeners: [String: [Int: AsyncStream<Delivery>.Continuation]] = [:]
        var nextId = 0
        var count = 0
        var closed = false
    }

    private let registry = Mutex(Registry())

    public init() {}

    static func key(hub: String, device: String) -> String { hub.lowercased() + "/" + device.lowercased() }

    /// Starts listening to a device; call `cancel` with the id when done.
    public func listen(hub: String, device: String) -> (id: Int, deliveries: AsyncStream<Delivery>) {
        let (stream, continuation) = AsyncStream<Delivery>.makeStream(bufferingPolicy: .unbounded)
        let key = Self.key(hub: hub, device: device)
        let id = registry.withLock { registry in
            if registry.closed {
                continuation.finish()
                return 0
            }
            registry.nextId += 1
            registry.listeners[key, default: [:]][registry.nextId] = continuation
            registry.count += 1
            return registry.nextId
        }
        return (id, stream)
    }

    public func cancel(hub: String, device: String, id: Int) {
        let key = Self.key(hub: hub, device: device)
        let continuation = registry.withLock { registry -> AsyncStream<Delivery>.Continuation? in
            guard let continuation = registry.listeners[key]?.removeValue(forKey: id) else { return nil }
            if registry.listeners[key]?.isEmpty == true { registry.listeners[key] = nil }
            registry.count -= 1
            return continuation
        }
        continuation?.finish()
    }

    /// Hands deliveries to the listeners of their devices.
    public func publish(_ deliveries: [Delivery]) {
        guard !deliveries.isEmpty else { return }
        let targets = registry.withLock { registry -> [(AsyncStream<Delivery>.Continuation, Delivery)] in
            guard registry.count > 0 else { return [] }
            var result: [(AsyncStream<Delivery>.Continuation, Delivery)] = []
            for delivery in deliveries {
                guard let listeners = registry.listeners[Self.key(hub: delivery.hub, device: delivery.device)] else { continue }
                for continuation in listeners.values { result.append((continuation, delivery)) }
            }
            return result
        }
        for (continuation, delivery) in targets { continuation.yield(delivery) }
    }

    /// Ends every open stream and refuses new ones (the hub is shutting down).
    public func closeAll() {
        let all = registry.withLock { registry -> [AsyncStream<Delivery>.Continuation] in
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
