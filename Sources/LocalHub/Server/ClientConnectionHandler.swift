import Foundation
import NIOCore
import NotificationHubs
import Synchronization

/// Closes a connection at once when its client holds its limit (`ClientConnections`), and
/// counts it off when it closes.
final class ClientConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let connections: ClientConnections
    private var counted: String?
    private var admitted = false

    init(_ connections: ClientConnections) { self.connections = connections }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let counted {
            connections.closed(counted)
            self.counted = nil
        }
        context.fireChannelInactive()
    }

    private func admit(context: ChannelHandlerContext) {
        guard !admitted else { return }
        admitted = true
        switch connections.opened(peer: context.channel.remoteAddress) {
        case .uncounted: break
        case .counted(let key): counted = key
        case .refused: context.close(promise: nil)
        }
    }
}
