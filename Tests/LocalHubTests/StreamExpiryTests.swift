import AsyncHTTPClient
import Foundation
import HubTestSupport
import NIOCore
import NotificationHubs
import TestTiers
import Testing

/// Issue 44: a device stream outlived the token that opened it. The hub ends it at the
/// token's `se`; the client ends it before, once the token is due for renewal, and opens it
/// again with a fresh one.
@Suite struct StreamExpiryTests {
    static let device = String(repeating: "ab", count: 32)

    /// The whole body of `response`, or nil when it has not ended within `seconds`.
    static func body(of response: HTTPClientResponse, within seconds: Int) async throws -> String? {
        try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask { String(buffer: try await response.body.collect(upTo: 1 << 20)) }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func theHubEndsAStreamWhenItsTokenExpires() async throws {
        try await TestHub.with { hub in
            let secret = try #require(try await hub.client(hub.listen).claimBuiltInPushDevice(Self.device).secret)
            let token = hub.token(hub.listen, lifetime: 2)
            let expiry = try #require(SharedAccessSignature.expiry(of: token))
            var request = HTTPClientRequest(
                url: hub.baseURL + BuiltInPushDelivery.path(hub: "news", device: Self.device, resource: "stream"))
            request.headers.add(name: "Authorization", value: token)
            request.headers.add(name: BuiltInPushDelivery.claimSecretHeader, value: secret)
            let response = try await HubClient.sharedHTTPClient.execute(request, timeout: .seconds(60))
            #expect(response.status == .ok)
            let body = try await Self.body(of: response, within: 60)
            let ended = try #require(body, "the stream was open a minute after its token expired")
            #expect(ended.contains(": connected"))
            #expect(Date() >= expiry.addingTimeInterval(-0.5), "it lasted as long as its token")
            // The client's stream knows when its token is due for renewal: at 80 % of its life.
            // On a client of its own: the hub closed the connection the ended stream was on, and a
            // pooled connection could be reused before the close is seen.
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let client = HubClient(
                connectionString: hub.listen, hub: "news", httpClient: http, retryPolicy: .none, tokenLifetime: 1000)
            let stream = try await client.deviceStream(device: Self.device, after: nil, epoch: nil, secret: secret)
            let renewIn = try #require(stream.renewAt).timeIntervalSinceNow
            #expect(renewIn > 500 && renewIn <= 800, "\(renewIn)")
            try await http.shutdown()
        }
    }

    /// A stream read past `renewAt` ends at its next chunk, a keep-alive at the latest,
    /// without reading on: what follows is read again from the resume point.
    @Test func aStreamDueForAFreshTokenEndsAtItsNextChunk() async throws {
        func delivery(_ seq: Int64) -> BuiltInPushDelivery {
            BuiltInPushDelivery(
                seq: seq, notificationId: "n\(seq)", hub: "news", device: Self.device, template: nil, tags: "World",
                deliveredAt: "2027-01-15T08:00:00Z", payload: .object([("aps", .object([("alert", .string("x"))]))]),
                epoch: "e1")
        }
        let chunks = [
            "retry: 1000\n: connected\n\n" + delivery(1).serverSentEvent, ": keep-alive\n\n", delivery(2).serverSentEvent,
        ]
        func read(renewAt: Date?) async throws -> [Int64] {
            let (bytes, continuation) = AsyncStream<ByteBuffer>.makeStream()
            for chunk in chunks { continuation.yield(ByteBuffer(string: chunk)) }
            continuation.finish()
            var seqs: [Int64] = []
            for try await batch in DeviceStream(body: .stream(bytes), renewAt: renewAt) { seqs += batch.deliveries.map(\.seq) }
            return seqs
        }
        #expect(try await read(renewAt: nil) == [1, 2])
        #expect(try await read(renewAt: .distantFuture) == [1, 2])
        #expect(try await read(renewAt: .distantPast) == [1], "ended at the keep-alive after the first delivery")
    }
}
