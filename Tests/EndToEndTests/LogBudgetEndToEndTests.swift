import AsyncHTTPClient
import Foundation
import HubTestSupport
import NIOCore
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

/// A stranger with the Listen key cannot spend the delivery log for everyone (issue 49): with
/// `--delivery-log-megabytes 2`, installations of 32 expanding templates each once turned
/// every ordinary send into hundreds of kilobytes of log, and retention took an offline
/// reader's unread news with the stranger's.
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct LogBudgetEndToEndTests {
    static let installations = 100

    @Test func anOfflineReadersUnreadNewsSurvivesAStrangerAtItsLimits() async throws {
        let arguments = [
            "--delivery-log-megabytes", "2", "--client-new-devices-per-hour", "\(Self.installations)",
            "--client-megabytes-per-hour", "64", "--trusted-proxy", "127.0.0.2",
        ]
        try await HubProcess.with(directory: TestHub.temporaryDirectory(), arguments: arguments) { hub in
            // The reader subscribes, then goes away (no stream open while the news comes).
            let reader = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            let subscribed = try await reader.run(["subscribe", "World"])
            #expect(subscribed.status == 0, "\(subscribed.stderr)")
            var configuration = HTTPClient.Configuration()
            configuration.localAddress = "127.0.0.2"
            let stranger = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            let devices: [String]
            do {
                devices = try await Self.register(hub, stranger)
                try await stranger.shutdown()
            } catch {
                try? await stranger.shutdown()
                throw error
            }
            #expect(devices.count == Self.installations, "the stranger registered all it may")
            // Twenty ordinary sends: each renders about 1.6 MB for the stranger's devices.
            let sender = try HubClient(connectionString: hub.full, hub: "news")
            let texts = (1...20).map { "Quake hits coast, update \($0)" }
            for text in texts {
                let receipt = try await sender.send(.template(["messageParam": text]), tagExpression: "World")
                let id = try #require(receipt.notificationId)
                _ = try await eventually("the send finished") {
                    try await sender.notificationDetails(id: id).state == .completed ? true : nil
                }
            }
            // Retention brings the log within its cap, from the stranger's devices.
            let strangers = Set(devices)
            // Each of theirs takes at least its row and a rendering of its own (the templates
            // differ, so no two share a payload).
            let least = Self.rendering(texts[0], installation: 0, template: 0).utf8.count + 30
            let held = try await eventually("the log within its cap") { () -> Int? in
                let counts = try await sender.builtInPushDevices()
                let theirs = counts.filter { strangers.contains($0.device) }.map(\.deliveries).reduce(0, +)
                return theirs * least <= 2 << 20 ? theirs : nil
            }
            #expect(held > 0, "the stranger keeps its newest")
            // The reader comes back: every message, and no note of any lost.
            let follow = try reader.start(["log", "--follow", "--json"])
            defer { follow.stop() }
            #expect(
                await follow.waitFor(timeout: 60) { out, _ in texts.allSatisfy { out.contains("\"\($0)\"") } },
                "\(follow.stdout) \(follow.stderr)")
            #expect(!follow.stdout.contains("\"gap\""), "\(follow.stdout)")
        }
    }

    /// A template that repeats the message 60 times, its own in all the hub.
    static func template(installation: Int, template: Int) -> String {
        let keys = (0..<60).map { String(format: #","k%02d":"$(messageParam)""#, $0) }.joined()
        return #"{"aps":{"alert":"$(messageParam)"},"own":"\#(installation)-\#(template)""# + keys + "}"
    }

    static func rendering(_ text: String, installation: Int, template: Int) -> String {
        Self.template(installation: installation, template: template).replacingOccurrences(
            of: "$(messageParam)", with: text)
    }

    /// Installations of 32 such templates, from one client behind a proxy this hub trusts,
    /// until the hub says the client added all it may.
    static func register(_ hub: HubProcess, _ client: HTTPClient) async throws -> [String] {
        let token = SharedAccessSignature.make(
            resource: hub.listen.hubURL("news"), keyName: hub.listen.keyName, key: hub.listen.key, lifetime: 3600)
        var devices: [String] = []
        for n in 0..<(installations + 5) {
            let templates = (0..<32).map {
                #""t\#($0)":{"body":\#(JSONValue.string(Self.template(installation: n, template: $0)).text)}"#
            }
            let device = randomDevice()
            let json =
                #"{"installationId":"x\#(n)","platform":"apns","pushChannel":"\#(device)","tags":["World"],"templates":{"#
                + templates.joined(separator: ",") + "}}"
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(hub.port)/news/installations/x\(n)?api-version=2020-06")
            request.method = .PUT
            request.headers.add(name: "Authorization", value: token)
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "X-Forwarded-For", value: "198.51.100.7")
            request.body = .bytes(ByteBuffer(string: json))
            let answer = try await client.execute(request, timeout: .seconds(30))
            _ = try await answer.body.collect(upTo: 1 << 16)
            if answer.status == .ok { devices.append(device) } else { #expect(answer.status == .tooManyRequests) }
        }
        return devices
    }
}
