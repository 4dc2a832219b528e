import Foundation
import HTTPTypes
import HubTestSupport
import Hummingbird
import Logging
import NotificationHubs
import Synchronization
import Testing

/// A server that answers from a script of statuses, counting requests: the other side of
/// HubClient's retry rules.
final class ScriptedServer: Sendable {
    private let statuses: Mutex<[(Int, String?)]>
    private let hits = Mutex(0)

    init(_ statuses: [(Int, String?)]) {
        self.statuses = Mutex(statuses)
    }

    var requests: Int { hits.withLock { $0 } }

    struct Responder: HTTPResponder {
        typealias Context = BasicRequestContext
        let server: ScriptedServer
        func respond(to request: Request, context: Context) async throws -> Response {
            _ = try await request.body.collect(upTo: 1 << 20)
            return server.next()
        }
    }

    func next() -> Response {
        hits.withLock { $0 += 1 }
        let (status, retryAfter) = statuses.withLock { $0.isEmpty ? (200, nil) : $0.removeFirst() }
        var headers = HTTPFields()
        if let retryAfter { headers[HTTPField.Name("Retry-After")!] = retryAfter }
        let body = status == 200 ? "" : "<Error><Code>\(status)</Code><Detail>scripted \(status)</Detail></Error>"
        return Response(status: .init(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    /// Serves while `body` runs, given the port; then stops gracefully.
    func serve<T>(_ body: (Int) async throws -> T) async throws -> T {
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

@Suite struct HubClientRetryTests {
    func client(port: Int, retries: Int) throws -> HubClient {
        let cs = try ConnectionString(
            parsing: "Endpoint=http://127.0.0.1:\(port)/;SharedAccessKeyName=k;SharedAccessKey=v;EntityPath=hub")
        return try HubClient(
            connectionString: cs, retryPolicy: RetryPolicy(maximumRetries: retries, baseDelay: 0.01, maximumDelay: 0.05))
    }

    @Test func throttlingAndServerErrorsAreRetried() async throws {
        let server = ScriptedServer([(429, "0"), (503, nil), (500, nil)])
        try await server.serve { port in
            try await client(port: port, retries: 3).deleteInstallation(id: "x")  // 429, 503, 500, then 200
            #expect(server.requests == 4)
        }
    }

    /// The wait itself is `RetryPolicy.delay` (tested below); here, that the header is read.
    @Test func retryAfterIsReadFromTheResponse() async throws {
        let server = ScriptedServer([(429, "7")])
        try await server.serve { port in
            let error = await #expect(throws: HubError.self) {
                try await client(port: port, retries: 0).deleteInstallation(id: "x")
            }
            #expect(error?.status == 429)
            #expect(error?.retryAfter == 7)
            #expect(server.requests == 1)
        }
    }

    @Test func retriesStopAtTheLimitWithTheLastError() async throws {
        let server = ScriptedServer([(503, nil), (503, nil), (503, nil)])
        try await server.serve { port in
            let error = await #expect(throws: HubError.self) {
                try await client(port: port, retries: 2).deleteInstallation(id: "x")
            }
            #expect(error?.status == 503)
            #expect(error?.detail == "scripted 503")
            #expect(server.requests == 3)
        }
    }

    @Test(arguments: [400, 401, 403, 404, 409, 413])
    func otherClientErrorsAreNotRetried(status: Int) async throws {
        let server = ScriptedServer([(status, nil)])
        try await server.serve { port in
            let error = await #expect(throws: HubError.self) {
                try await client(port: port, retries: 3).deleteInstallation(id: "x")
            }
            #expect(error?.status == status)
            #expect(server.requests == 1)
        }
    }

    @Test func retryAfterIsTheDelay() {
        let policy = RetryPolicy(maximumRetries: 3, baseDelay: 1, maximumDelay: 60)
        #expect(policy.delay(afterAttempt: 0, error: .status(429, detail: "", retryAfter: 7)) == 7)
        #expect(policy.delay(afterAttempt: 2, error: .status(503, detail: "")) == 4)
        #expect(policy.delay(afterAttempt: 3, error: .status(503, detail: "")) == nil)
        #expect(policy.delay(afterAttempt: 0, error: .status(404, detail: "")) == nil)
        #expect(policy.delay(afterAttempt: 0, error: .unreachable("refused")) == nil)
        #expect(
            RetryPolicy(maximumRetries: 9, baseDelay: 1, maximumDelay: 60).delay(afterAttempt: 8, error: .status(500, detail: ""))
                == 60)
    }
}
