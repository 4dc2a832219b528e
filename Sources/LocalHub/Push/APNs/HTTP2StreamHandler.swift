import NIOCore
import NIOHPACK
import NIOHTTP2
import Synchronization

/// After `NIOHTTP2Handler` on a client connection: each `Outgoing` request becomes a new
/// stream's HEADERS and DATA frames, flushed with the others of the same event-loop turn, and
/// the frames that come back become its `HTTP2Answer`. Also keeps the inbound flow-control
/// windows open (without a stream multiplexer nobody else does) and stops taking requests
/// after a GOAWAY.
final class HTTP2StreamHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = Outgoing
    typealias OutboundOut = HTTP2Frame

    /// A request for a new stream.
    struct Outgoing: Sendable {
        var headers: HPACKHeaders
        var body: ByteBuffer
        var timeout: TimeAmount
        var bodyLimit: Int
        var answer: EventLoopPromise<HTTP2Answer>
    }

    /// Set once the server said GOAWAY or the connection ended: no new streams on it.
    final class GoingAway: Sendable {
        private let flag = Atomic(false)
        var value: Bool { flag.load(ordering: .relaxed) }
        func set() { flag.store(true, ordering: .relaxed) }
    }

    private struct Pending {
        var answer: EventLoopPromise<HTTP2Answer>
        var status: Int?
        var headers = HPACKHeaders()
        var body: ByteBuffer?
        var bodyLimit: Int
        var timer: Scheduled<Void>?
    }

    /// The flow-control window both sides start with (RFC 9113 §6.9.2); refilled once half is used.
    private static let window = 65_535

    private let goingAway: GoingAway
    private var streams: [HTTP2StreamID: Pending] = [:]
    private var nextStream = 1
    private var flushScheduled = false
    /// When a frame last came in.
    private var lastRead = NIODeadline.now()
    private var context: ChannelHandlerContext?

    init(goingAway: GoingAway) {
        self.goingAway = goingAway
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let outgoing = unwrapOutboundIn(data)
        // From here on this handler answers the request, whatever happens.
        promise?.succeed()
        guard !goingAway.value, nextStream < Int(Int32.max), context.channel.isActive else {
            goingAway.set()
            outgoing.answer.fail(HTTP2RequestError.notSent("the connection takes no new streams"))
            return
        }
        let id = HTTP2StreamID(nextStream)
        nextStream += 2
        let loop = context.eventLoop.assumeIsolated()
        let timer = loop.scheduleTask(in: outgoing.timeout) { [weak self] () -> Void in
            self?.timedOut(id, context: context, after: outgoing.timeout)
        }
        streams[id] = Pending(answer: outgoing.answer, bodyLimit: outgoing.bodyLimit, timer: timer)
        let hasBody = outgoing.body.readableBytes > 0
        let sent = context.eventLoop.makePromise(of: Void.self)
        sent.futureResult.assumeIsolated().whenFailure { [weak self] error in
            // HTTP/2 refused the frame before it was encoded, or the channel had closed before
            // the write: it never left. A failed socket write may have sent part of a flush
            // that held it.
            let neverLeft = error is any NIOHTTP2Error || (error as? ChannelError) == .ioOnClosedChannel
            self?.finish(id, failing: neverLeft ? HTTP2RequestError.notSent("\(error)") : .broken("\(error)"))
        }
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: outgoing.headers, endStream: !hasBody)))),
            promise: sent)
        if hasBody {
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(outgoing.body), endStream: true)))),
                promise: nil)
        }
        guard !flushScheduled else { return }
        flushScheduled = true
        loop.execute { [weak self] in
            self?.flushScheduled = false
            context.flush()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        lastRead = .now()
        if frame.streamID == .rootStream {
            if case .goAway(let last, _, _) = frame.payload {
                goingAway.set()
                // Streams above the last one the server processes were never acted on.
                for id in streams.keys where id > last {
                    finish(id, failing: HTTP2RequestError.notSent("the server is going away"))
                }
                closeIfDone()
            }
            return
        }
        guard var pending = streams[frame.streamID] else { return }
        switch frame.payload {
        case .headers(let headers):
            if pending.status == nil, let status = headers.headers.first(name: ":status").flatMap(Int.init), status >= 200 {
                pending.status = status
                pending.headers = headers.headers
            }
            streams[frame.streamID] = pending
            if headers.endStream { finish(frame.streamID) }
        case .data(let data):
            if case .byteBuffer(var bytes) = data.data {
                var body = pending.body ?? context.channel.allocator.buffer(capacity: 0)
                if let slice = bytes.readSlice(length: min(bytes.readableBytes, pending.bodyLimit - body.readableBytes)) {
                    body.writeImmutableBuffer(slice)
                }
                pending.body = body
            }
            streams[frame.streamID] = pending
            if data.endStream { finish(frame.streamID) }
        case .rstStream(let code):
            finish(frame.streamID, failing: Self.resetError(code))
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let update = event as? NIOHTTP2WindowUpdatedEvent, let size = update.inboundWindowSize,
            size < Self.window / 2, update.streamID == .rootStream || streams[update.streamID] != nil
        {
            context.writeAndFlush(
                wrapOutboundOut(
                    HTTP2Frame(streamID: update.streamID, payload: .windowUpdate(windowSizeIncrement: Self.window - size))),
                promise: nil)
        } else if let closed = event as? StreamClosedEvent, let reason = closed.reason {
            finish(closed.streamID, failing: Self.resetError(reason))
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// A stream's error ends that stream (its `StreamClosedEvent` follows when the error came
    /// in on it). Any other error makes the connection take no new streams; it closes once its
    /// streams are answered, or when the server or the TCP connection ends it.
    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            finish(streamError.streamID, failing: HTTP2RequestError.broken("\(streamError.baseError)"))
            return
        }
        // A stream NIOHTTP2 held back (beyond the server's stream limit) and let go after a
        // GOAWAY: its request was already answered as not sent, and the connection is fine.
        if error is NIOHTTP2Errors.CreatedStreamAfterGoaway { return }
        goingAway.set()
        closeIfDone()
    }

    func channelInactive(context: ChannelHandlerContext) {
        goingAway.set()
        failAll(HTTP2RequestError.broken("the connection closed"))
        context.fireChannelInactive()
    }

    /// A stream the server reset: REFUSED_STREAM says it was not processed (RFC 9113 §8.7),
    /// so it can go again; anything else may have been.
    private static func resetError(_ code: HTTP2ErrorCode) -> HTTP2RequestError {
        code == .refusedStream
            ? .notSent("the server refused the stream") : .broken("the server reset the stream (\(code))")
    }

    private func timedOut(_ id: HTTP2StreamID, context: ChannelHandlerContext, after timeout: TimeAmount) {
        guard streams[id] != nil else { return }
        // Nothing at all came in for as long as a request may wait: the connection is taken for
        // dead (a path that drops everything), and the next requests get a new one.
        if lastRead + timeout <= .now() { goingAway.set() }
        finish(id, failing: HTTP2RequestError.timedOut)
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
    }

    /// Answers stream `id`: with `error`, or with what came back on it.
    private func finish(_ id: HTTP2StreamID, failing error: Error? = nil) {
        guard let pending = streams.removeValue(forKey: id) else { return }
        pending.timer?.cancel()
        if let error {
            pending.answer.fail(error)
        } else if let status = pending.status {
            pending.answer.succeed(
                HTTP2Answer(status: status, headers: pending.headers, body: pending.body ?? ByteBuffer()))
        } else {
            pending.answer.fail(HTTP2RequestError.broken("the stream ended without a status"))
        }
        if streams.isEmpty { closeIfDone() }
    }

    /// Closes a connection that takes no new streams once none is waiting.
    private func closeIfDone() {
        guard goingAway.value, streams.isEmpty, let context, context.channel.isActive else { return }
        context.close(promise: nil)
    }

    private func failAll(_ error: Error) {
        for id in Array(streams.keys) { finish(id, failing: error) }
    }
}
