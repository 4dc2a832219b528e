import NIOCore
import NIOPosix
import NotificationHubs

/// What an open device stream is handed.
public enum StreamEvent: Sendable {
    case delivery(Delivery)
    /// Time for a keep-alive comment (one ticker serves every stream).
    case keepAlive
}

/// Where one open device stream's events go. `DeviceStreams` hands every sink of one event
/// loop its events in one job on that loop, so a fan-out to many streams costs a job per
/// loop, not a task wake-up and a hop per stream.
public protocol DeviceStreamSink: AnyObject, Sendable {
    /// The loop `receive` and `flush` are called on.
    var eventLoop: any EventLoop { get }
    /// On `eventLoop`: one event for the stream; `shapes` is shared by the sinks of one job,
    /// so that the deliveries of one notification build their frames' common part once.
    func receive(_ event: StreamEvent, shapes: inout FrameShapes)
    /// On `eventLoop`: after the events of one job, so that they leave in one write.
    func flush()
    /// Ends the stream: the hub is shutting down. Any thread.
    func end()
}

/// A sink that queues events for a task to read as an async sequence, at most `limit`
/// waiting; a reader that falls further behind is ended (it resumes from the database).
/// For listeners inside the process (tests, tools); the HTTP streams write to their
/// channel directly (`ChannelStreamSink`).
public final class BufferedStreamSink: DeviceStreamSink {
    public let eventLoop: any EventLoop
    public let events: AsyncStream<StreamEvent>
    private let continuation: AsyncStream<StreamEvent>.Continuation

    public init(eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next(), limit: Int = 1024) {
        self.eventLoop = eventLoop
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(limit))
    }

    public func receive(_ event: StreamEvent, shapes: inout FrameShapes) {
        if case .dropped = continuation.yield(event) { continuation.finish() }
    }

    public func flush() {}

    public func end() { continuation.finish() }
}

/// The frame shapes of one job on one loop: consecutive deliveries of one notification
/// through one template share one `BuiltInPushDelivery.FrameShape`, built for the first.
public struct FrameShapes {
    private var last: (delivery: Delivery, epoch: String, shape: BuiltInPushDelivery.FrameShape)?

    public init() {}

    /// The shape of `delivery`'s frame in the delivery log of `epoch`.
    public mutating func shape(of delivery: Delivery, epoch: String) -> BuiltInPushDelivery.FrameShape {
        if let last, last.epoch == epoch, last.delivery.sharesFrameShape(with: delivery) { return last.shape }
        let shape = delivery.frameShape(epoch: epoch)
        last = (delivery, epoch, shape)
        return shape
    }
}
