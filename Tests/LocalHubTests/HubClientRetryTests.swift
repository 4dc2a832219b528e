import Foundation
import HTTPTypes
import HubTestSupport
import Hummingbird
import Logging
import NotificationHubs
import Synchronization
import Testing

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
