import AsyncHTTPClient
import Foundation
import HTTPTypes
import HubTestSupport
import Hummingbird
import Logging
import NotificationHubs
import Synchronization
import TestTiers
import Testing

@Suite struct HubClientRetryTests {
    func client(port: Int, retries: Int) throws -> HubClient {
        let cs = try ConnectionString(
            parsing: "Endpoint=http://127.0.0.1:\(port)/;SharedAccessKeyName=k;SharedAccessKey=v;EntityPath=hub")
        return try HubClient(
            connectionString: cs, retryPolicy: RetryPolicy(maximumRetries: retries, backoff: Backoff(base: 0.01, maximum: 0.05)))
    }

    @Test(.tags(.live), .fullSuiteOnly) func throttlingAndServerErrorsAreRetried() async throws {
        let server = ScriptedServer([(429, "0"), (503, nil), (500, nil)])
        try await server.serve { port in
            try await client(port: port, retries: 3).deleteInstallation(id: "x")  // 429, 503, 500, then 200
            #expect(server.requests == 4)
        }
    }

    /// The wait itself is `RetryPolicy.delay` (tested below); here, that the header is read.
    @Test(.tags(.live), .fullSuiteOnly) func retryAfterIsReadFromTheResponse() async throws {
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

    /// A burst of calls five times the HTTP client's pool (8 connections), to a hub that takes
    /// 0.6 s to answer each, so that the last round starts after the connect timeout (2 s):
    /// every call gets through. (They used to wait for a
    /// connection inside the pool, where the wait counts against the connect timeout, and
    /// failed as "connection timed out"; a CI run failed so.)
    @Test(.tags(.live), .fullSuiteOnly) func aBurstBeyondThePoolWaitsItsTurnInsteadOfTimingOut() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(2)
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let server = ScriptedServer([], delay: .milliseconds(600))
        var failure: Error?
        do {
            try await server.serve { port in
                let cs = try ConnectionString(
                    parsing: "Endpoint=http://127.0.0.1:\(port)/;SharedAccessKeyName=k;SharedAccessKey=v;EntityPath=hub")
                let client = HubClient(connectionString: cs, hub: "hub", httpClient: http, retryPolicy: .none)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for i in 0..<40 { group.addTask { try await client.deleteInstallation(id: "x\(i)") } }
                    try await group.waitForAll()
                }
            }
        } catch {
            failure = error
        }
        try await http.shutdown()
        #expect(failure == nil, "\(String(describing: failure))")
        #expect(server.requests == 40)
    }

    @Test(.tags(.live), .fullSuiteOnly) func retriesStopAtTheLimitWithTheLastError() async throws {
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

    @Test(.tags(.live), .fullSuiteOnly, arguments: [400, 401, 403, 404, 409, 413])
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
        let policy = RetryPolicy(maximumRetries: 3, backoff: Backoff(base: 1, maximum: 60))
        #expect(policy.delay(afterAttempt: 0, error: .status(429, detail: "", retryAfter: 7)) == 7)
        #expect(policy.delay(afterAttempt: 2, error: .status(503, detail: ""), unit: 0) == 4)
        #expect(policy.delay(afterAttempt: 2, error: .status(503, detail: ""), unit: 0.5) == 3)
        #expect(policy.delay(afterAttempt: 3, error: .status(503, detail: "")) == nil)
        #expect(policy.delay(afterAttempt: 0, error: .status(404, detail: "")) == nil)
        #expect(policy.delay(afterAttempt: 0, error: .unreachable("refused")) == nil)
        #expect(
            RetryPolicy(maximumRetries: 9, backoff: Backoff(base: 1, maximum: 60)).delay(
                afterAttempt: 8, error: .status(500, detail: ""), unit: 0) == 60)
    }

    /// Clients that failed together must not retry together: delays are spread over the
    /// upper half of each step, and never past it.
    @Test func delaysAreJitteredWithinTheirStep() {
        let backoff = Backoff(base: 1, maximum: 60)
        for attempt in 0..<10 {
            let ceiling = backoff.ceiling(attempt: attempt)
            let delays = (0..<200).map { _ in backoff.delay(attempt: attempt) }
            #expect(delays.allSatisfy { $0 >= ceiling / 2 && $0 <= ceiling })
            #expect(Set(delays).count > 100)
        }
        #expect(Backoff(base: 1, maximum: 60, jitter: 0).delay(attempt: 3) == 8)
        var counting = Backoff(base: 0.5, maximum: 4, jitter: 0)
        #expect((0..<6).map { _ in counting.fail() } == [0.5, 1, 2, 4, 4, 4])
        counting.reset()
        #expect(counting.fail() == 0.5)
    }
}
