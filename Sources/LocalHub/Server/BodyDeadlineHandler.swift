import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Gives each request's body a deadline from its head: a client that stops sending halfway
/// is answered 408 and the connection closed, instead of holding it (and a task waiting on
/// the body) forever. The idle timeout covers the time before a head; this covers the body.
/// Requests may be pipelined, so the 408 is written only when it answers the request cut
/// short: every earlier request answered in full and no response under way; otherwise the
/// connection is just closed (a 408 in the middle of another response would corrupt it).
final class BodyDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    /// Request heads read and responses written to their end, on this connection.
    private var requestsRead = 0
    private var responsesEnded = 0
    /// A response head was written and its end not yet.
    private var responding = false
    /// A request's head was read and its end not yet.
    private var bodyOpen = false

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            requestsRead += 1
            bodyOpen = true
            // A new request gets the whole timeout for its body.
            deadline?.cancel()
            deadline = nil
        case .end:
            bodyOpen = false
            deadline?.cancel()
            deadline = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    /// The deadline is set only when a read ends with a body still open: a request whose
    /// head, body and end arrive together, the usual case, costs no timer.
    func channelReadComplete(context: ChannelHandlerContext) {
        if bodyOpen, deadline == nil {
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            let context = NIOLoopBound(context, eventLoop: context.eventLoop)
            deadline = context.value.eventLoop.scheduleTask(in: timeout) {
                handler.value.expire(context: context.value)
            }
        }
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head: responding = true
        case .end:
            responding = false
            responsesEnded += 1
        case .body: break
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    private func expire(context: ChannelHandlerContext) {
        deadline = nil
        if !responding, responsesEnded == requestsRead - 1 {
            var head = HTTPResponse(status: .requestTimeout)
            head.headerFields[.connection] = "close"
            head.headerFields[.contentLength] = "0"
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.close(promise: nil)
    }
}
