import NIOCore
import NIOHTTPTypes
import NotificationHubs

/// A device stream's sink that writes its Server-Sent Events straight into the stream's
/// HTTP channel, on the channel's event loop: a fan-out to many streams is one job per loop
/// writing to each channel, with no task woken per stream.
///
/// The stream's request task writes the head, the backlog and the deliveries published
/// before their commit through the response writer, then calls `goLive`: events that came
/// in meanwhile were held here and are written first (those the backlog covered are
/// skipped), and from then on each event is written as it comes. Writes submitted to the
/// loop run in order, so nothing overtakes what the response writer wrote before. The task
/// then waits in `waitUntilEnded` and calls `close` before the response's end is written,
/// so that no frame follows it.
///
/// All mutable state is confined to `eventLoop`.
final class ChannelStreamSink: DeviceStreamSink, @unchecked Sendable {
    let channel: any Channel
    var eventLoop: any EventLoop { channel.eventLoop }
    private let epoch: String
    /// Events that may wait for the client: held before `goLive`, or written while the
    /// channel is not writable.
    private let limit: Int

    private enum Phase {
        case holding([Delivery])
        case live
        case ended
    }

    private var phase = Phase.holding([])
    /// The newest delivery written.
    private var last: Int64 = 0
    /// Frames written since the channel last was writable.
    private var waiting = 0
    private var unflushed = false
    private let ended: EventLoopPromise<Void>

    init(channel: any Channel, epoch: String, limit: Int) {
        self.channel = channel
        self.epoch = epoch
        self.limit = limit
        ended = channel.eventLoop.makePromise()
        let ended = self.ended
        channel.closeFuture.whenComplete { _ in ended.succeed() }
    }

    func receive(_ event: StreamEvent, shapes: inout FrameShapes) {
        switch (phase, event) {
        case (.holding(var held), .delivery(let delivery)):
            phase = .ended  // no copy of `held` while it grows
            held.append(delivery)
            if held.count > limit {
                end()
            } else {
                phase = .holding(held)
            }
        case (.holding, .keepAlive), (.ended, _):
            break
        case (.live, .delivery(let delivery)):
            guard delivery.seq > last else { return }
            last = delivery.seq
            let shape = shapes.shape(of: delivery, epoch: epoch)
            var frame = channel.allocator.buffer(capacity: shape.size(device: delivery.device))
            shape.write(seq: delivery.seq, device: delivery.device, to: &frame)
            write(frame)
        case (.live, .keepAlive):
            write(Self.keepAlive)
        }
    }

    func flush() {
        guard unflushed else { return }
        unflushed = false
        channel.flush()
    }

    /// Ends the stream: its request task stops waiting and finishes the response.
    func end() {
        if eventLoop.inEventLoop {
            phase = .ended
            ended.succeed()
        } else {
            eventLoop.execute { self.end() }
        }
    }

    /// Writes what was held and the deliveries published before their commit (`pending`),
    /// those after `last` in order, then writes each event as it comes.
    func goLive(after last: Int64, pending: [Delivery]) async {
        try? await eventLoop.submit {
            guard case .holding(let held) = self.phase else { return }
            self.last = last
            self.phase = .live
            var seen = Set<Int64>()
            var shapes = FrameShapes()
            for delivery in (pending + held).sorted(by: { $0.seq < $1.seq }) where seen.insert(delivery.seq).inserted {
                self.receive(.delivery(delivery), shapes: &shapes)
            }
            self.flush()
        }.get()
    }

    /// Returns once the stream has ended: the client went away, it fell too far behind, the
    /// hub is shutting down, or the waiting task was cancelled.
    func waitUntilEnded() async {
        await withTaskCancellationHandler {
            _ = try? await ended.futureResult.get()
        } onCancel: {
            self.end()
        }
    }

    /// Stops writing; returns once no frame can follow.
    func close() async {
        try? await eventLoop.submit { self.phase = .ended }.get()
    }

    private static let keepAlive = ByteBuffer(string: ": keepalive\n\n")

    private func write(_ frame: ByteBuffer) {
        if channel.isWritable {
            waiting = 0
        } else {
            waiting += 1
            if waiting > limit {
                end()
                return
            }
        }
        channel.write(HTTPResponsePart.body(frame), promise: nil)
        unflushed = true
    }
}
