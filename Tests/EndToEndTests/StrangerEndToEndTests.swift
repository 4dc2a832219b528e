import AsyncHTTPClient
import Foundation
import HubTestSupport
import NIOCore
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

/// A stranger with the Listen key (which every app ships) takes all that its limits allow;
/// a new terminal still subscribes and gets its news (issue 26, items 3 and 4).
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct StrangerEndToEndTests {
    @Test func aNewTerminalSubscribesAndStreamsWhileAStrangerHoldsAllItMay() async throws {
        // The stranger comes through a proxy on this machine (127.0.0.2) that says who it
        // is: every address of this machine is one client, so a stranger must be elsewhere.
        let limits = ["--client-new-devices-per-hour", "30", "--client-streams", "8", "--trusted-proxy", "127.0.0.2"]
        try await HubProcess.with(directory: TestHub.temporaryDirectory(), arguments: limits) { hub in
            var configuration = HTTPClient.Configuration()
            configuration.localAddress = "127.0.0.2"
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
            let stranger = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            do {
                try await Self.play(hub, stranger)
                try await stranger.shutdown()
            } catch {
                try? await stranger.shutdown()
                throw error
            }
        }
    }

    static func play(_ hub: HubProcess, _ stranger: HTTPClient) async throws {
        do {
            let token = SharedAccessSignature.make(
                resource: hub.listen.hubURL("news"), keyName: hub.listen.keyName, key: hub.listen.key, lifetime: 3600)
            func request(_ method: HTTPMethod, _ path: String, secret: String? = nil) -> HTTPClientRequest {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(hub.port)" + path)
                request.method = method
                request.headers.add(name: "Authorization", value: token)
                request.headers.add(name: "X-Forwarded-For", value: "198.51.100.7")
                if let secret { request.headers.add(name: BuiltInPushDelivery.claimSecretHeader, value: secret) }
                return request
            }
            // Its claims, each with the secret the hub answered.
            var claimed: [(device: String, secret: String?)] = []
            var refusedClaims = 0
            for _ in 0..<60 {
                let device = randomDevice()
                let answer = try await stranger.execute(
                    request(.PUT, BuiltInPushDelivery.path(hub: "news", device: device)), timeout: .seconds(30))
                if answer.status == .ok {
                    let body = try await answer.body.collect(upTo: 4096)
                    claimed.append((device, (try? JSONValue(parsing: Array(buffer: body)))?["secret"]?.stringValue))
                } else if answer.status == .tooManyRequests {
                    refusedClaims += 1
                }
            }
            #expect(claimed.count == 30 && refusedClaims == 30, "\(claimed.count) claimed, \(refusedClaims) refused")
            // Its streams, held open for the rest of the test.
            var streams: [HTTPClientResponse] = []
            var refusedStreams = 0
            for (device, secret) in claimed.prefix(12) {
                let answer = try await stranger.execute(
                    request(.GET, BuiltInPushDelivery.path(hub: "news", device: device, resource: "stream"), secret: secret),
                    timeout: .seconds(300))
                if answer.status == .ok {
                    streams.append(answer)
                } else if answer.status == .tooManyRequests {
                    refusedStreams += 1
                }
            }
            #expect(streams.count == 8 && refusedStreams == 4, "\(streams.count) streams, \(refusedStreams) refused")
            // A stream on a token nothing knows is refused as such.
            let unknown = try await stranger.execute(
                request(.GET, BuiltInPushDelivery.path(hub: "news", device: randomDevice(), resource: "stream")),
                timeout: .seconds(30))
            #expect(unknown.status == .notFound)

            // A new terminal of this machine's user subscribes and gets the news.
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            let subscribed = try await user.run(["subscribe", "World"])
            #expect(subscribed.status == 0, "\(subscribed.stderr)")
            let follow = try user.start(["log", "--follow"])
            defer { follow.stop() }
            let sender = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            let sent = try await sender.run(["send", "Still reaching real terminals", "--category", "World"])
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(
                await follow.waitFor(timeout: 60) { out, _ in out.contains("Still reaching real terminals") },
                "\(follow.stdout) \(follow.stderr)")
            withExtendedLifetime(streams) {}
        }
    }
}
