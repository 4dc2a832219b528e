import Crypto
import Foundation
import HubTestSupport
import NIOCore
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// The APNs client against a loopback APNs (issue 14, item 2): HTTP/2 over TLS, a provider
/// token the peer verifies, the topic from the credentials only, the sender's headers passed
/// on, and APNs' answers turned into outcomes and retries as the wire spec says.
@Suite(.tags(.live), .fullSuiteOnly) struct APNsClientTests {
    static let device = String(repeating: "ab", count: 32)
    static let alert = Array(#"{"aps":{"alert":"Breaking World News : hi"}}"#.utf8)

    /// A client for `peer`'s key and a peer, serving while `body` runs.
    static func withPeer<T>(
        _ behaviours: [String: APNsPeer.Behaviour] = [:], peerKey: P256.Signing.PublicKey? = nil, streams: Int = 500,
        delay: Duration = .zero, idleTimeout: Duration? = nil, requestTimeout: TimeAmount = .seconds(30),
        _ body: (APNsClient, APNsPeer) async throws -> T
    ) async throws -> T {
        let key = P256.Signing.PrivateKey()
        let peer = APNsPeer(
            key: peerKey ?? key.publicKey, keyId: "ABC123DEFG", teamId: "DEF123GHIJ", topic: "com.example.news",
            behaviours: behaviours, delay: delay, idleTimeout: idleTimeout)
        return try await peer.serve { url in
            let credentials = PushCredentials.APNs(
                token: try APNsProviderToken(key: key.pemRepresentation, keyId: "ABC123DEFG", teamId: "DEF123GHIJ"),
                topic: "com.example.news", endpoint: url, caFile: peer.certificateFile)
            let client = try APNsClient(
                credentials, maximumStreams: streams, backoff: Backoff(base: 0.01, maximum: 0.05), retries: 3,
                requestTimeout: requestTimeout)
            do {
                let result = try await body(client, peer)
                await client.shutdown()
                return result
            } catch {
                await client.shutdown()
                throw error
            }
        }
    }

    @Test func aNotificationArrivesOverHTTP2WithTheTopicOfTheCredentials() async throws {
        try await Self.withPeer { client, peer in
            let answer = await client.send(
                device: Self.device, payload: Self.alert,
                headers: ["apns-priority": "5", "apns-topic": "com.evil.app", "apns-collapse-id": "c1", "x-other": "no"])
            guard case .delivered = answer else {
                Issue.record("\(answer)")
                return
            }
            let received = try #require(peer.received.first)
            #expect(received.scheme == "https", "HTTP/2 (its :scheme), not HTTP/1.1")
            #expect(received.device == Self.device && received.body == String(decoding: Self.alert, as: UTF8.self))
            #expect(received.headers["apns-topic"] == "com.example.news", "the sender cannot choose the topic")
            #expect(received.headers["apns-priority"] == "5" && received.headers["apns-collapse-id"] == "c1")
            #expect(received.headers["apns-push-type"] == "alert" && received.headers["x-other"] == nil)
            let background = await client.send(
                device: Self.device, payload: Array(#"{"aps":{"content-available":1}}"#.utf8), headers: [:])
            guard case .delivered = background else {
                Issue.record("\(background)")
                return
            }
            #expect(peer.received.last?.headers["apns-push-type"] == "background")
            #expect(peer.received.last?.headers["apns-priority"] == "5", "APNs takes background pushes at priority 5 only")
        }
    }

    @Test func refusalsComeBackWithAPNsReason() async throws {
        let gone = String(repeating: "cd", count: 32)
        try await Self.withPeer([gone: .refuse(status: 410, reason: "Unregistered")]) { client, peer in
            #expect(
                await client.send(device: gone, payload: Self.alert, headers: [:])
                    == .refused(status: 410, reason: "Unregistered"))
            #expect(
                await client.send(device: "abc", payload: Self.alert, headers: [:])
                    == .refused(status: 400, reason: "BadDeviceToken"))
            #expect(peer.received.count == 2, "refusals are not retried")
        }
        // A token signed with another key than the one APNs holds.
        try await Self.withPeer(peerKey: P256.Signing.PrivateKey().publicKey) { client, peer in
            #expect(
                await client.send(device: Self.device, payload: Self.alert, headers: [:])
                    == .refused(status: 403, reason: "InvalidProviderToken"))
            #expect(peer.received.count == 1)
        }
    }

    @Test func anExpiredTokenIsRenewedOnceAndTheNotificationSent() async throws {
        try await Self.withPeer([Self.device: .expireFirstToken]) { client, peer in
            guard case .delivered = await client.send(device: Self.device, payload: Self.alert, headers: [:]) else {
                Issue.record("not delivered: \(peer.received.map(\.answered))")
                return
            }
            let tokens = peer.received.map { $0.headers["authorization"] ?? "" }
            #expect(peer.received.map(\.answered) == [403, 200] && tokens[0] != tokens[1])
        }
    }

    @Test func throttlingAndServerErrorsAreRetriedWithinBounds() async throws {
        let busy = String(repeating: "ef", count: 32)
        let broken = String(repeating: "01", count: 32)
        try await Self.withPeer([
            busy: .fail(status: 429, times: 2, retryAfter: "0"), broken: .fail(status: 500, times: 10, retryAfter: nil),
        ]) { client, peer in
            guard case .delivered = await client.send(device: busy, payload: Self.alert, headers: [:]) else {
                Issue.record("throttled twice, then accepted: \(peer.received.map(\.answered))")
                return
            }
            #expect(
                await client.send(device: broken, payload: Self.alert, headers: [:])
                    == .refused(status: 500, reason: "InternalServerError"))
            #expect(peer.received.filter { $0.device == busy }.map(\.answered) == [429, 429, 200])
            #expect(peer.received.filter { $0.device == broken }.count == 4, "the first try and three retries")
        }
    }

    @Test func manySendsShareTheStreamCapAndAllArrive() async throws {
        try await Self.withPeer(streams: 4, delay: .milliseconds(20)) { client, peer in
            let answers = await Self.sendAll(client, devices: (0..<60).map { String(format: "%064x", $0) })
            #expect(answers.allSatisfy { if case .delivered = $0 { true } else { false } })
            #expect(Set(peer.received.map(\.device)).count == 60)
            #expect(peer.peakConcurrency <= 4, "at most 4 requests in flight: \(peer.peakConcurrency)")
        }
    }

    @Test func requestsInFlightWhenTheTokenExpiresAllGetThrough() async throws {
        let devices = (0..<40).map { String(format: "%064x", $0 + 1000) }
        let behaviours = Dictionary(uniqueKeysWithValues: devices.map { ($0, APNsPeer.Behaviour.expireFirstToken) })
        try await Self.withPeer(behaviours, delay: .milliseconds(5)) { client, peer in
            let answers = await Self.sendAll(client, devices: devices)
            #expect(answers.allSatisfy { if case .delivered = $0 { true } else { false } }, "\(answers)")
            #expect(Set(peer.received.compactMap { $0.headers["authorization"] }).count == 2, "one renewal for all")
        }
    }

    @Test func retryAfterIsWaitedFor() async throws {
        try await Self.withPeer([Self.device: .fail(status: 429, times: 1, retryAfter: "1")]) { client, peer in
            let start = ContinuousClock.now
            guard case .delivered = await client.send(device: Self.device, payload: Self.alert, headers: [:]) else {
                Issue.record("not delivered: \(peer.received.map(\.answered))")
                return
            }
            #expect(ContinuousClock.now - start >= .seconds(1), "Retry-After: 1 was honoured")
        }
    }

    static func sendAll(_ client: APNsClient, devices: [String]) async -> [PushAnswer] {
        await withTaskGroup(of: PushAnswer.self) { group in
            for device in devices {
                group.addTask { await client.send(device: device, payload: Self.alert, headers: [:]) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    /// The client's own HTTP/2 connection keeps the connection's receive window open: refusals
    /// whose bodies add up to more than the 64 KB both sides start with all come back. (Without
    /// WINDOW_UPDATEs the peer could send nothing more, and the rest would time out.)
    @Test func answersBeyondTheFirstFlowControlWindowKeepComing() async throws {
        let reason = String(repeating: "R", count: 2_000)
        let devices = (0..<60).map { String(format: "%064x", $0 + 5000) }
        let behaviours = Dictionary(
            uniqueKeysWithValues: devices.map { ($0, APNsPeer.Behaviour.refuse(status: 400, reason: reason)) })
        try await Self.withPeer(behaviours, requestTimeout: .seconds(10)) { client, _ in
            for device in devices {
                let answer = await client.send(device: device, payload: Self.alert, headers: [:])
                guard case .refused(400, _) = answer else {
                    Issue.record("\(device): \(answer)")
                    return
                }
            }
        }
    }

    /// A connection the peer closes (its idle timeout: GOAWAY, then the close) is replaced by a
    /// new one for the next send. The idle timeout is a second, not a tenth: on a busy machine
    /// the first request of a new connection, written after a hop through the task pool, came
    /// later than a tenth of a second after the handshake, and the peer had closed it by then.
    @Test func aConnectionThePeerClosesIsOpenedAgain() async throws {
        try await Self.withPeer(idleTimeout: .seconds(1)) { client, peer in
            for round in 0..<3 {
                let answer = await client.send(device: Self.device, payload: Self.alert, headers: [:])
                guard case .delivered = answer else {
                    Issue.record("round \(round): \(answer)")
                    return
                }
                try await Task.sleep(for: .seconds(2))
            }
            #expect(peer.received.count == 3)
        }
    }

    /// A request APNs does not answer in time ends as unreachable (its stream reset), and the
    /// connection goes on serving the next. The time-out is ten seconds, not three: with the
    /// whole suite running on the same cores, the send after the time-out can take longer.
    @Test func anUnansweredRequestTimesOutAndTheConnectionGoesOn() async throws {
        try await Self.withPeer(requestTimeout: .seconds(10)) { client, peer in
            peer.hold()
            let answer = await client.send(device: Self.device, payload: Self.alert, headers: [:])
            #expect(answer == .unreachable("no answer in time"))
            peer.open()
            let next = await client.send(device: Self.device, payload: Self.alert, headers: [:])
            guard case .delivered = next else {
                Issue.record("the send after the time-out: \(next)")
                return
            }
        }
    }

    /// Something at the endpoint that does not finish a TLS handshake (a plain HTTP server):
    /// the send ends as unreachable, and nothing reached that server as a request.
    @Test func anEndpointThatIsNotTLSIsUnreachable() async throws {
        let server = ScriptedServer([])
        try await server.serve { port in
            let credentials = PushCredentials.APNs(
                token: try APNsProviderToken(
                    key: P256.Signing.PrivateKey().pemRepresentation, keyId: "ABC123DEFG", teamId: "DEF123GHIJ"),
                topic: "com.example.news", endpoint: "https://127.0.0.1:\(port)", caFile: nil)
            let client = try APNsClient(credentials, backoff: Backoff(base: 0.01, maximum: 0.05), retries: 1)
            let answer = await client.send(device: Self.device, payload: Self.alert, headers: [:])
            await client.shutdown()
            guard case .unreachable = answer else {
                Issue.record("\(answer)")
                return
            }
            #expect(server.requests == 0)
        }
    }
}
