import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Gives each request's body a deadline from its head: a client that stops sending halfway
/// is answered 408 and the connection closed, instead of holding it (and a task waiting on
/// the body) forever. The idle timeout covers the time before a head; this covers the body.
final class BodyDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    private var responding = false

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            responding = false
            deadline?.cancel()
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            let context = NIOLoopBound(context, eventLoop: context.eventLoop)
            deadline = context.value.eventLoop.scheduleTask(in: timeout) {
                handler.value.expire(context: context.value)
            }
        case .end:
            deadline?.cancel()
            deadline = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head = unwrapOutboundIn(data) { responding = true }
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
        if !responding {
            var head = HTTPResponse(status: .requestTimeout)
            head.headerFields[.connection] = "close"
            head.headerFields[.contentLength] = "0"
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.close(promise: nil)
    }
}
