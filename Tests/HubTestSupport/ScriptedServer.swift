import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import TestTiers

/// An HTTP peer that answers from a script of statuses and error details, counting requests
/// and keeping the `Authorization` headers it was sent: the other side of HubClient's retry
/// rules, a hostile hub, or whatever squats a hub's port.
public final class ScriptedServer: Sendable {
    private let statuses: Mutex<[(Int, String?, String?)]>
    private let seen = Mutex<(requests: Int, authorizations: [String])>((0, []))
    private let delay: Duration

    /// Each entry: status, `Retry-After`, and the error detail (`scripted <status>` when nil);
    /// every answer waits `delay` first (a slow hub).
    public init(_ statuses: [(Int, String?)], details: [String?] = [], delay: Duration = .zero) {
        self.delay = delay
        self.statuses = Mutex(
            statuses.enumerated().map { i, entry in (entry.0, entry.1, i < details.count ? details[i] : nil) })
    }

    public var requests: Int { seen.withLock { $0.requests } }
    /// Every `Authorization` header it received.
    public var authorizations: [String] { seen.withLock { $0.authorizations } }

    struct Responder: HTTPResponder {
        typealias Context = BasicRequestContext
        let server: ScriptedServer
        func respond(to request: Request, context: Context) async throws -> Response {
            _ = try await request.body.collect(upTo: 1 << 20)
            if server.delay > .zero { try await Task.sleep(for: server.delay) }
            return server.next(authorization: request.headers[.authorization])
        }
    }

    func next(authorization: String?) -> Response {
        seen.withLock {
            $0.requests += 1
            if let authorization { $0.authorizations.append(authorization) }
        }
        let (status, retryAfter, detail) = statuses.withLock { $0.isEmpty ? (200, nil, nil) : $0.removeFirst() }
        var headers = HTTPFields()
        if let retryAfter { headers[HTTPField.Name("Retry-After")!] = retryAfter }
        let body =
            status == 200 ? "" : "<Error><Code>\(status)</Code><Detail>\(detail ?? "scripted \(status)")</Detail></Error>"
        return Response(status: .init(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    /// Serves while `body` runs, given the port; then stops gracefully.
    public func serve<T>(_ body: (Int) async throws -> T) async throws -> T {
        try TestTier.requireFullSuite("a server on a socket")
        let (ready, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "scripted")
        logger.logLevel = .critical
        let app = Application(
            responder: Responder(server: self), configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        return try await withService(app) {
            var iterator = ready.makeAsyncIterator()
            return try await body(await iterator.next() ?? 0)
        }
    }
}
