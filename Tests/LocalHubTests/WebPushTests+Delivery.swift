import AsyncHTTPClient
import Crypto
import Foundation
import HubTestSupport
import NIOCore
import NIOSSL
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// The client against the loopback push service: what arrives, what is refused, retried or
/// given up.
extension WebPushTests {
    static let alert = Array(#"{"title":"Breaking World News","body":"hi"}"#.utf8)

    @Test(.tags(.live), .fullSuiteOnly) func aNotificationArrivesDecryptableWithTheHeadersOfRFC8030() async throws {
        try await Self.withPeer { client, peer in
            let subscription = peer.subscribe()
            let answer = await Self.send(
                client, subscription, Self.alert,
                headers: ["ttl": "60", "urgency": "high", "topic": "world-news", "x-other": "no", "authorization": "x"])
            guard case .delivered(let id) = answer else {
                Issue.record("\(answer) \(peer.received.map(\.reason))")
                return
            }
            let received = try #require(peer.received.first)
            #expect(id?.hasPrefix(subscription.endpoint.components(separatedBy: "/push/")[0] + "/message/") == true)
            #expect(received.plaintext == Self.alert, "the peer decrypted the payload sent")
            #expect(received.headers["ttl"] == "60" && received.headers["urgency"] == "high")
            #expect(received.headers["topic"] == "world-news" && received.headers["x-other"] == nil)
            #expect(received.headers["content-encoding"] == "aes128gcm")
            #expect(received.headers["content-type"] == "application/octet-stream")
            #expect(
                received.headers["authorization"]
                    == "vapid t=\(client.vapid.token(audience: VAPID.origin(of: subscription.endpoint)!)), k=\(client.vapid.publicKey)"
            )
            // Without a TTL, the default; an unknown urgency and a long topic are left out.
            let second = await Self.send(
                client, subscription, [], headers: ["urgency": "asap", "topic": String(repeating: "t", count: 33)])
            #expect(Self.isDelivered(second))
            let last = try #require(peer.received.last)
            #expect(last.headers["ttl"] == "2419200" && last.headers["urgency"] == nil && last.headers["topic"] == nil)
            #expect(last.plaintext == [], "an empty payload is a message too")
            #expect(peer.received.first?.headers["authorization"] == last.headers["authorization"], "one token per origin")
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func aTokenSignedWithAnotherKeyIsRefusedByThePeer() async throws {
        // The client's key is not the one the browser subscribed with.
        try await Self.withPeer(peerKey: P256.Signing.PrivateKey().publicKey) { client, peer in
            let answer = await Self.send(client, peer.subscribe(), Self.alert)
            #expect(answer == .refused(status: 403, reason: "Forbidden"))
            #expect(peer.received.first?.reason == "VAPIDKeyMismatch", "the peer said why; the answer names only the status")
            #expect(peer.received.count == 1 && peer.received.first?.plaintext == nil)
        }
        // A token signed with another key, sent under the subscribed key's name.
        try await Self.withPeer { client, peer in
            let subscription = peer.subscribe()
            let forger = VAPID(key: P256.Signing.PrivateKey(), subject: Self.subject)
            let token = forger.token(audience: try #require(VAPID.origin(of: subscription.endpoint)))
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(peer.certificateFile)]
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
            var request = HTTPClientRequest(url: subscription.endpoint)
            request.method = .POST
            request.headers.add(name: "authorization", value: "vapid t=\(token), k=\(client.vapid.publicKey)")
            request.headers.add(name: "ttl", value: "60")
            request.headers.add(name: "content-encoding", value: "aes128gcm")
            request.body = .bytes(
                ByteBuffer(
                    bytes: try WebPushEncryption.encrypt(Self.alert, p256dh: subscription.p256dh, auth: subscription.auth)))
            let status = try await http.execute(request, timeout: .seconds(30)).status.code
            try await http.shutdown()
            #expect(status == 401 && peer.received.first?.reason == "BadSignature")
            // The same request with the client's own token goes through: only the signature differed.
            #expect(Self.isDelivered(await Self.send(client, subscription, Self.alert)))
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func goneNotFoundAndTooLargeAreRefusedWithoutRetries() async throws {
        try await Self.withPeer { client, peer in
            let gone = peer.subscribe(.refuse(status: 410, reason: nil))
            let notFound = peer.subscribe(.refuse(status: 404, reason: nil))
            let said = peer.subscribe(.refuse(status: 404, reason: "push subscription has unsubscribed or expired."))
            let tooLarge = peer.subscribe(.refuse(status: 413, reason: "too big"))
            let unauthorized = peer.subscribe(.refuse(status: 401, reason: nil))
            #expect(await Self.send(client, gone, Self.alert) == .refused(status: 410, reason: "Gone"))
            #expect(await Self.send(client, notFound, Self.alert) == .refused(status: 404, reason: "NotFound"))
            #expect(
                await Self.send(client, said, Self.alert)
                    == .refused(status: 404, reason: "NotFound"), "the service's words are not passed on")
            #expect(await Self.send(client, tooLarge, Self.alert) == .refused(status: 413, reason: "PayloadTooLarge"))
            #expect(await Self.send(client, unauthorized, Self.alert) == .refused(status: 401, reason: "Unauthorized"))
            #expect(peer.received.count == 5, "refusals are not retried")
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func throttlingIsRetriedAndAServiceThatKeepsFailingIsGivenUp() async throws {
        try await Self.withPeer { client, peer in
            let busy = peer.subscribe(.fail(status: 429, times: 2, retryAfter: "0"))
            let down = peer.subscribe(.fail(status: 503, times: 1_000, retryAfter: nil))
            #expect(Self.isDelivered(await Self.send(client, busy, Self.alert)))
            #expect(peer.received.filter { $0.subscription == busy.id }.map(\.answered) == [429, 429, 201])
            #expect(peer.received.last?.plaintext == Self.alert)
            #expect(await Self.send(client, down, Self.alert) == .refused(status: 503, reason: "ServiceUnavailable"))
            #expect(peer.received.filter { $0.subscription == down.id }.count == 4, "the first try and three retries")
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func badSubscriptionsAndPayloadsAreRefusedWithoutARequest() async throws {
        try await Self.withPeer { client, peer in
            let good = peer.subscribe()
            var offCurve = try #require(Base64URL.decode(good.p256dh))
            offCurve[64] ^= 0x01
            let http = good.endpoint.replacingOccurrences(of: "https://", with: "http://")
            let cases: [(String, String, String, [UInt8], PushAnswer)] = [
                (good.endpoint, "not base64!", good.auth, Self.alert, .refused(status: 400, reason: "BadP256dh")),
                (good.endpoint, Base64URL.encode(offCurve), good.auth, Self.alert, .refused(status: 400, reason: "BadP256dh")),
                (good.endpoint, good.p256dh, "AAAA", Self.alert, .refused(status: 400, reason: "BadAuth")),
                (http, good.p256dh, good.auth, Self.alert, .refused(status: 400, reason: "BadEndpoint")),
                ("ftp://127.0.0.1/push/x", good.p256dh, good.auth, Self.alert, .refused(status: 400, reason: "BadEndpoint")),
                ("https://", good.p256dh, good.auth, Self.alert, .refused(status: 400, reason: "BadEndpoint")),
                ("/push/\(good.id)", good.p256dh, good.auth, Self.alert, .refused(status: 400, reason: "BadEndpoint")),
                ("", good.p256dh, good.auth, Self.alert, .refused(status: 400, reason: "BadEndpoint")),
                (
                    good.endpoint, good.p256dh, good.auth, Array(repeating: 0x41, count: 3994),
                    .refused(status: 413, reason: "PayloadTooLarge")
                ),
            ]
            for (endpoint, p256dh, auth, payload, expected) in cases {
                let answer = await client.send(endpoint: endpoint, p256dh: p256dh, auth: auth, payload: payload, headers: [:])
                #expect(answer == expected, "\(endpoint) \(p256dh) \(auth) \(payload.count)")
            }
            // Credentials that do not allow private endpoints refuse the peer's own (loopback).
            let strict = try WebPushClient(
                PushCredentials.WebPush(vapidKey: P256.Signing.PrivateKey(), subject: "mailto:a@example.com", caFile: nil))
            let refused = await strict.send(
                endpoint: good.endpoint, p256dh: good.p256dh, auth: good.auth, payload: Self.alert, headers: [:])
            await strict.shutdown()
            #expect(refused == .unreachable("PrivateAddress (loopback)"))
            #expect(peer.received.isEmpty, "no request for any of them")
            // The largest payload goes through.
            let largest = Array(repeating: UInt8(0x42), count: WebPushClient.maximumPayload)
            #expect(Self.isDelivered(await Self.send(client, good, largest)))
            #expect(peer.received.first?.plaintext == largest)
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func aHundredConcurrentSendsAllArriveToTheirSubscriptions() async throws {
        try await Self.withPeer { client, peer in
            let subscriptions = (0..<100).map { _ in peer.subscribe() }
            let answers = await withTaskGroup(of: PushAnswer.self) { group in
                for (i, subscription) in subscriptions.enumerated() {
                    group.addTask { await Self.send(client, subscription, Array("message \(i)".utf8)) }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy(Self.isDelivered), "\(answers.filter { !Self.isDelivered($0) })")
            let plaintexts = Dictionary(peer.received.map { ($0.subscription, $0.plaintext ?? []) }) { first, _ in first }
            #expect(peer.received.count == 100)
            for (i, subscription) in subscriptions.enumerated() {
                #expect(plaintexts[subscription.id] == Array("message \(i)".utf8))
            }
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func theCapOnRequestsInFlightHolds() async throws {
        try await Self.withPeer(concurrent: 4, delay: .milliseconds(20)) { client, peer in
            let subscriptions = (0..<40).map { _ in peer.subscribe() }
            let answers = await withTaskGroup(of: PushAnswer.self) { group in
                for subscription in subscriptions { group.addTask { await Self.send(client, subscription, Self.alert) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy(Self.isDelivered))
            #expect(peer.peakConcurrency <= 4, "at most 4 requests in flight: \(peer.peakConcurrency)")
        }
    }
}
