import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// What came back on one stream.
struct HTTP2Answer: Sendable {
    var status: Int
    var headers: HPACKHeaders
    var body: ByteBuffer
}

/// Why a request got no answer.
enum HTTP2RequestError: Error, CustomStringConvertible, Equatable {
    /// The server never processed it (no connection, or a GOAWAY below its stream): it can be
    /// sent again without being shown twice.
    case notSent(String)
    /// The connection failed, or the stream was reset, while it was in flight.
    case broken(String)
    /// No answer within the request's time.
    case timedOut

    var description: String {
        switch self {
        case .notSent(let why): "not sent: \(why)"
        case .broken(let why): "the connection broke: \(why)"
        case .timedOut: "no answer in time"
        }
    }
}

/// A client's HTTP/2 connection over TLS (ALPN h2) to one origin, opened when first needed and
/// again once it has closed or the server sent GOAWAY. Each request is written as frames
/// straight onto the connection (no channel per stream), and the writes of one event-loop turn
/// are flushed together: AsyncHTTPClient's per-request machinery was most of what sending to
/// APNs cost.
final class HTTP2Connection: Sendable {
    let host: String
    let port: Int
    /// The URL's path without a final `/` (empty for a bare origin): requests' paths go after it.
    let basePath: String
    private let authority: String
    private let sslContext: NIOSSLContext
    private let connectTimeout: TimeAmount
    private let state = Mutex<Link>(.none)

    /// Where the connection stands.
    private enum Link {
        case none
        case connecting(EventLoopFuture<Channel>)
        case open(Channel, HTTP2StreamHandler.GoingAway)
        case closed
    }

    /// - Parameter origin: `https://host[:port]`, with a path that prefixes every request's.
    init(origin: String, trusting caFile: String?, connectTimeout: TimeAmount = .seconds(10)) throws {
        guard let url = URL(string: origin), url.scheme == "https", let host = url.host, !host.isEmpty else {
            throw HTTP2RequestError.notSent("'\(origin.prefix(100))' is not an https URL")
        }
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        port = url.port ?? 443
        authority = url.port.map { "\(host):\($0)" } ?? host
        basePath = url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        sslContext = try NIOSSLContext(configuration: tls)
        self.connectTimeout = connectTimeout
    }

    /// Closes the connection; requests after fail as not sent.
    func shutdown() async {
        let link = state.withLock { state -> Link in
            defer { state = .closed }
            return state
        }
        switch link {
        case .connecting(let future): try? await future.get().close()
        case .open(let channel, _): try? await channel.close()
        case .none, .closed: break
        }
    }

    /// Sends one request (lower-case header names) and returns its answer, the body cut at
    /// `bodyLimit` bytes.
    func request(
        method: String, path: String, headers: [(String, String)], body: ByteBuffer, timeout: TimeAmount,
        bodyLimit: Int = 64 << 10
    ) async throws(HTTP2RequestError) -> HTTP2Answer {
        let channel: Channel
        do {
            channel = try await self.channel().get()
        } catch {
            throw .notSent("no connection to \(authority): \(error)")
        }
        var block = HPACKHeaders()
        block.reserveCapacity(headers.count + 5)
        block.add(name: ":method", value: method)
        block.add(name: ":scheme", value: "https")
        block.add(name: ":path", value: path)
        block.add(name: ":authority", value: authority)
        for (name, value) in headers { block.add(name: name, value: value) }
        block.add(name: "content-length", value: String(body.readableBytes))
        let answer = channel.eventLoop.makePromise(of: HTTP2Answer.self)
        let handed = channel.eventLoop.makePromise(of: Void.self)
        // The stream handler owns `answer` once it has the request; until then, a failed
        // write (the connection closed meanwhile) is the only way it can end.
        handed.futureResult.whenFailure { error in answer.fail(HTTP2RequestError.notSent("\(error)")) }
        channel.write(
            HTTP2StreamHandler.Outgoing(
                headers: block, body: body, timeout: timeout, bodyLimit: bodyLimit, answer: answer), promise: handed)
        do {
            return try await answer.futureResult.get()
        } catch let error as HTTP2RequestError {
            throw error
        } catch {
            throw .broken("\(error)")
        }
    }

    /// The open connection, or a new one when there is none or it can take no new streams.
    private func channel() -> EventLoopFuture<Channel> {
        let (future, started) = state.withLock { state -> (EventLoopFuture<Channel>, HTTP2StreamHandler.GoingAway?) in
            switch state {
            case .open(let channel, let goingAway) where channel.isActive && !goingAway.value:
                return (channel.eventLoop.makeSucceededFuture(channel), nil)
            case .connecting(let future):
                return (future, nil)
            case .closed:
                return (MultiThreadedEventLoopGroup.singleton.next().makeFailedFuture(ChannelError.ioOnClosedChannel), nil)
            case .none, .open:
                let goingAway = HTTP2StreamHandler.GoingAway()
                let future = connect(goingAway)
                state = .connecting(future)
                return (future, goingAway)
            }
        }
        if let goingAway = started {
            // Registered outside the lock: the callback takes it.
            future.whenComplete { result in
                self.state.withLock { state in
                    guard case .connecting(let current) = state, current === future else { return }
                    switch result {
                    case .success(let channel): state = .open(channel, goingAway)
                    case .failure: state = .none
                    }
                }
            }
        }
        return future
    }

    /// A connection whose TLS handshake chose HTTP/2 (`connectTimeout` for all of it), push
    /// turned off.
    private func connect(_ goingAway: HTTP2StreamHandler.GoingAway) -> EventLoopFuture<Channel> {
        let sslContext = sslContext
        let serverName = host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : host
        let timeout = connectTimeout
        return ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                    try sync.addHandler(HandshakeCheck(timeout: timeout, ready: channel.eventLoop.makePromise()))
                    try sync.addHandler(
                        NIOHTTP2Handler(
                            mode: .client, initialSettings: nioDefaultSettings + [HTTP2Setting(parameter: .enablePush, value: 0)])
                    )
                    try sync.addHandler(HTTP2StreamHandler(goingAway: goingAway))
                }
            }
            .connect(host: host, port: port)
            .flatMap { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.handler(type: HandshakeCheck.self).ready.futureResult
                }
                .flatMap { $0 }
                .map { channel }
            }
    }
}

/// Holds a new connection back from requests until its TLS handshake is done and chose
/// HTTP/2 (ALPN h2); closes it when the handshake fails, chooses something else or takes
/// longer than `timeout`. Requests written before then would be lost with the connection
/// without knowing whether they were sent.
private final class HandshakeCheck: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    let ready: EventLoopPromise<Void>
    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?
    private var done = false

    init(timeout: TimeAmount, ready: EventLoopPromise<Void>) {
        self.timeout = timeout
        self.ready = ready
    }

    func handlerAdded(context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [weak self] () -> Void in
            self?.fail(HTTP2RequestError.notSent("the TLS handshake took longer than it may"), context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent, !done {
            if negotiated == "h2" {
                done = true
                timer?.cancel()
                ready.succeed()
            } else {
                fail(
                    HTTP2RequestError.notSent("the server does not speak HTTP/2 (ALPN: \(negotiated ?? "none"))"),
                    context: context)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        fail(error, context: context)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(ChannelError.ioOnClosedChannel, context: context)
        context.fireChannelInactive()
    }

    /// Before the handshake is done only: later errors are the other handlers' to judge.
    private func fail(_ error: Error, context: ChannelHandlerContext) {
        guard !done else { return }
        done = true
        timer?.cancel()
        ready.fail(error)
        context.close(promise: nil)
    }
}
