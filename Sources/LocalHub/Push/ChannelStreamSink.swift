import NIOCore
import NIOHTTP1
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
/// Live frames of a GET stream enter the pipeline below the HTTP layers, at NIO's response
/// encoder, already framed as the chunks of the chunked response that encoder started (its
/// head said so): a frame is one buffer through two handlers instead of a response part
/// converted and split into three by five. Where no such encoder is found (other pipelines,
/// tests), frames are written as response parts.
///
/// All mutable state is confined to `eventLoop`.
final class ChannelStreamSink: DeviceStreamSink, @unchecked Sendable {
    let channel: any Channel
    /// The channel's loop, kept here: a fan-out asks each sink for it, and the channel
    /// itself need not be touched for that.
    let eventLoop: any EventLoop
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
    /// Whether frames may go below the HTTP layers (a GET, whose response has a body).
    private let mayWriteChunks: Bool
    /// The response encoder's context, found when going live: frames are written there.
    private var chunks: ChannelHandlerContext?

    init(channel: any Channel, epoch: String, limit: Int, mayWriteChunks: Bool = false) {
        self.channel = channel
        eventLoop = channel.eventLoop
        self.epoch = epoch
        self.limit = limit
        self.mayWriteChunks = mayWriteChunks
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
            write(capacity: shape.size(device: delivery.device)) {
                shape.write(seq: delivery.seq, device: delivery.device, to: &$0)
            }
        case (.live, .keepAlive):
            write(capacity: Self.keepAlive.utf8CodeUnitCount) { $0.writeStaticString(Self.keepAlive) }
        }
    }

    func flush() {
        guard unflushed else { return }
        unflushed = false
        if let chunks { chunks.flush() } else { channel.flush() }
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
            if self.mayWriteChunks {
                self.chunks = try? self.channel.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
            }
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

    private static let keepAlive: StaticString = ": keepalive\n\n"
    /// Room before a frame for its chunk header: up to eight hex digits and CRLF.
    private static let chunkHeaderRoom = 10

    /// Writes one frame that `fill` appends (about `capacity` bytes), as a chunk when the
    /// encoder's context is known, else as a response part.
    private func write(capacity: Int, _ fill: (inout ByteBuffer) -> Void) {
        if channel.isWritable {
            waiting = 0
        } else {
            waiting += 1
            if waiting > limit {
                end()
                return
            }
        }
        unflushed = true
        guard let chunks else {
            var frame = channel.allocator.buffer(capacity: capacity)
            fill(&frame)
            channel.write(HTTPResponsePart.body(frame), promise: nil)
            return
        }
        // The frame, then its length in hex and CRLF in the room left before it, then CRLF.
        var chunk = channel.allocator.buffer(capacity: Self.chunkHeaderRoom + capacity + 2)
        chunk.moveWriterIndex(forwardBy: Self.chunkHeaderRoom)
        fill(&chunk)
        let header = String(chunk.writerIndex - Self.chunkHeaderRoom, radix: 16) + "\r\n"
        let start = Self.chunkHeaderRoom - header.utf8.count
        chunk.setString(header, at: start)
        chunk.moveReaderIndex(to: start)
        chunk.writeStaticString("\r\n")
        chunks.write(NIOAny(IOData.byteBuffer(chunk)), promise: nil)
    }
}
