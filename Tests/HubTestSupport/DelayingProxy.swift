import NIOCore
import NIOPosix
import Synchronization
import TestTiers

/// A loopback TCP proxy in front of a server (PostgreSQL, in the tests) that holds back what
/// the server says: passed on at once, each chunk `delayed` (a slow database, or a slow way
/// to it), or `held` until told otherwise (a database that answers nothing). What clients
/// send goes through at once. Each store (or client) reaching the server through it judges
/// by itself whether the database answers.
public final class DelayingProxy: Sendable {
    /// How the server's answers go to the clients.
    public enum Mode: Sendable {
        case through
        /// Each chunk `delay` after it arrived (after the mode changed, for held ones).
        case delayed(TimeAmount)
        case held
    }

    /// The mode, and when it was set; shared with every connection's handlers.
    final class State: Sendable {
        let mode = Mutex<(mode: Mode, since: NIODeadline)>((.through, .now()))
        let connections = Mutex<[any Channel]>([])

        /// When a chunk that arrived at `arrival` may go on: nil while held.
        func release(arrival: NIODeadline) -> NIODeadline? {
            mode.withLock { state in
                switch state.mode {
                case .through: return arrival
                case .held: return nil
                case .delayed(let delay): return max(arrival, state.since) + delay
                }
            }
        }
    }

    public let port: Int
    private let listener: any Channel
    private let state: State

    private init(port: Int, listener: any Channel, state: State) {
        self.port = port
        self.listener = listener
        self.state = state
    }

    /// Runs `body` with a proxy to `127.0.0.1:port`, and closes it and its connections after.
    public static func with<T>(to port: Int, _ body: (DelayingProxy) async throws -> T) async throws -> T {
        try TestTier.requireFullSuite("a proxy on a socket")
        let state = State()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { client in
                state.connections.withLock { $0.append(client) }
                let server = ClientBootstrap(group: client.eventLoop)
                    .channelInitializer { server in
                        state.connections.withLock { $0.append(server) }
                        return server.eventLoop.makeCompletedFuture {
                            try server.pipeline.syncOperations.addHandler(ToClient(client: client, state: state))
                        }
                    }
                    .connect(host: "127.0.0.1", port: port)
                return client.eventLoop.makeCompletedFuture {
                    try client.pipeline.syncOperations.addHandler(ToServer(server: server))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let proxy = DelayingProxy(port: listener.localAddress?.port ?? 0, listener: listener, state: state)
        do {
            let result = try await body(proxy)
            await proxy.close()
            return result
        } catch {
            await proxy.close()
            throw error
        }
    }

    /// From now on, the server's answers go on as `mode` says.
    public func set(_ mode: Mode) {
        state.mode.withLock { $0 = (mode, .now()) }
    }

    private func close() async {
        try? await listener.close()
        for channel in state.connections.withLock({ $0 }) { try? await channel.close() }
    }

    /// A client's bytes, straight to the server (once connected to it).
    final class ToServer: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let server: EventLoopFuture<any Channel>

        init(server: EventLoopFuture<any Channel>) { self.server = server }

        func channelActive(context: ChannelHandlerContext) {
            let client = context.channel
            server.whenFailure { _ in client.close(promise: nil) }
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = unwrapInboundIn(data)
            server.whenSuccess { $0.writeAndFlush(bytes, promise: nil) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            server.whenSuccess { $0.close(promise: nil) }
        }

        func errorCaught(context: ChannelHandlerContext, error: Error) { context.close(promise: nil) }
    }

    /// The server's bytes, to the client when the mode lets them go, in the order they came.
    final class ToClient: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let client: any Channel
        let state: State
        private var waiting: [(bytes: ByteBuffer, arrival: NIODeadline)] = []
        private var pump: RepeatedTask?
        private var ended = false

        init(client: any Channel, state: State) {
            self.client = client
            self.state = state
        }

        func handlerAdded(context: ChannelHandlerContext) {
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            pump = context.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(5), delay: .milliseconds(5)) { _ in
                handler.value.release()
            }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            waiting.append((unwrapInboundIn(data), .now()))
            release()
        }

        func channelInactive(context: ChannelHandlerContext) {
            ended = true
            release()
        }

        func errorCaught(context: ChannelHandlerContext, error: Error) { context.close(promise: nil) }

        /// Passes on what may go now; closes the client once the server closed and all went.
        func release() {
            guard client.isActive else {
                pump?.cancel()
                waiting = []
                return
            }
            let now = NIODeadline.now()
            var wrote = false
            while let first = waiting.first, let at = state.release(arrival: first.arrival), at <= now {
                client.write(first.bytes, promise: nil)
                waiting.removeFirst()
                wrote = true
            }
            if wrote { client.flush() }
            if ended, waiting.isEmpty {
                pump?.cancel()
                client.close(promise: nil)
            }
        }
    }
}
