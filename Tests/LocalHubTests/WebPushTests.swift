import AsyncHTTPClient
import Crypto
import Foundation
import HubTestSupport
import NIOCore
import NIOSSL
import NotificationHubs
import PropertyBased
import Testing

@testable import LocalHub

/// The Web Push client against a loopback push service that is also the browser: RFC 8291
/// encryption byte for byte against the RFC's example and decrypted by the peer's own
/// receiver, VAPID tokens the peer verifies, the sender's headers passed on as RFC 8030 says,
/// and the service's answers turned into outcomes and retries.
struct WebPushTests {
    static let subject = "mailto:news@example.com"

    /// A client with a VAPID key and a peer expecting `peerKey` (the client's unless given),
    /// serving while `body` runs.
    static func withPeer<T>(
        _ behaviour: WebPushPeer.Behaviour = .accept, peerKey: P256.Signing.PublicKey? = nil, concurrent: Int = 100,
        delay: Duration = .zero, _ body: (WebPushClient, WebPushPeer) async throws -> T
    ) async throws -> T {
        let key = P256.Signing.PrivateKey()
        let peer = WebPushPeer(vapidKey: peerKey ?? key.publicKey, behaviour: behaviour, delay: delay)
        return try await peer.serve { _ in
            let credentials = PushCredentials.WebPush(
                vapidKey: key, subject: subject, caFile: peer.certificateFile, allowPrivateEndpoints: true)
            let client = try WebPushClient(
                credentials, maximumConcurrent: concurrent, backoff: Backoff(base: 0.01, maximum: 0.05), retries: 3)
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

    static func send(
        _ client: WebPushClient, _ subscription: WebPushPeer.Subscription, _ payload: [UInt8], headers: [String: String] = [:]
    )
        async -> PushAnswer
    {
        await client.send(
            endpoint: subscription.endpoint, p256dh: subscription.p256dh, auth: subscription.auth, payload: payload,
            headers: headers)
    }

    static func isDelivered(_ answer: PushAnswer) -> Bool {
        if case .delivered = answer { true } else { false }
    }

    // MARK: Encryption

    /// RFC 8291 Appendix A: the example's keys, salt and plaintext give its body exactly, and
    /// the peer's receiver reads it back.
    @Test func theRFC8291ExampleEncryptsToItsBodyByteForByte() throws {
        let sender = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: #require(Base64URL.decode("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")))
        #expect(
            Base64URL.encode(Array(sender.publicKey.x963Representation))
                == "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
        let receiver = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: #require(Base64URL.decode("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94")))
        let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        #expect(Base64URL.encode(Array(receiver.publicKey.x963Representation)) == p256dh)
        let auth = "BTBZMqHH6r4Tts7J_aSIgg"
        let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
        let expected =
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27ml"
            + "mlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPT"
            + "pK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        let body = try WebPushEncryption.encrypt(
            plaintext, p256dh: p256dh, auth: auth, senderKey: sender, salt: Base64URL.decode("DGv6ra1nlYgDCS1FRnbzlw"))
        #expect(Base64URL.encode(body) == expected)
        let opened = WebPushPeer.decrypt(
            try #require(Base64URL.decode(expected)), key: receiver, auth: try #require(Base64URL.decode(auth)))
        #expect(opened == plaintext)
    }

    /// Random plaintexts of every size a record holds come back whole through the peer's
    /// receiver; any byte changed but the record size makes the body unreadable.
    @Test func randomPlaintextsRoundTripThroughThePeersReceiver() async {
        await propertyCheck(count: 60, input: Gen.uint8().array(of: 0...WebPushClient.maximumPayload), Gen.int(in: 0...10_000)) {
            plaintext, flip in
            let browser = P256.KeyAgreement.PrivateKey()
            let auth = (0..<16).map { _ in UInt8.random(in: .min ... .max) }
            let body = try WebPushEncryption.encrypt(
                plaintext, p256dh: Base64URL.encode(Array(browser.publicKey.x963Representation)), auth: Base64URL.encode(auth))
            #expect(body.count == WebPushEncryption.headerSize + plaintext.count + 1 + WebPushEncryption.tagSize)
            #expect(body.count <= 4096 && Array(body[16..<21]) == [0, 0, 0x10, 0, 65])
            #expect(WebPushPeer.decrypt(body, key: browser, auth: auth) == plaintext)
            // Any byte but the record size (16..<20): RFC 8188 does not protect `rs`, and a
            // single record reads the same under any size that holds it.
            var tampered = body
            let positions = Array(0..<16) + Array(20..<body.count)
            let position = positions[flip % positions.count]
            tampered[position] ^= 0x01
            #expect(WebPushPeer.decrypt(tampered, key: browser, auth: auth) == nil, "byte \(position) changed")
            #expect(WebPushPeer.decrypt(body, key: P256.KeyAgreement.PrivateKey(), auth: auth) == nil)
        }
        // The two ends of the range, always.
        for size in [0, WebPushClient.maximumPayload] {
            let browser = P256.KeyAgreement.PrivateKey()
            let plaintext = (0..<size).map { UInt8(truncatingIfNeeded: $0) }
            let body = try? WebPushEncryption.encrypt(
                plaintext, p256dh: Base64URL.encode(Array(browser.publicKey.x963Representation)),
                auth: Base64URL.encode(Array(repeating: 7, count: 16)))
            #expect(body.flatMap { WebPushPeer.decrypt($0, key: browser, auth: Array(repeating: 7, count: 16)) } == plaintext)
        }
    }

    @Test func badKeysAndSizesAreThrownNotCrashedOn() throws {
        let good = Base64URL.encode(Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation))
        let auth = Base64URL.encode(Array(repeating: 1, count: 16))
        var offCurve = try #require(Base64URL.decode(good))
        offCurve[64] ^= 0x01
        let compressed = Base64URL.encode(Array(P256.KeyAgreement.PrivateKey().publicKey.compressedRepresentation))
        for bad in ["", "!!!", "A", String(good.dropLast(2)), Base64URL.encode(offCurve), compressed] {
            #expect(throws: WebPushEncryptionError.badP256dh) { try WebPushEncryption.encrypt([1], p256dh: bad, auth: auth) }
        }
        for bad in ["", "AAAA", Base64URL.encode(Array(repeating: 1, count: 17)), "BTBZMqHH6r4Tts7J/aSIgg"] {
            #expect(throws: WebPushEncryptionError.badAuth) { try WebPushEncryption.encrypt([1], p256dh: good, auth: bad) }
        }
        #expect(throws: WebPushEncryptionError.badSalt) {
            try WebPushEncryption.encrypt([1], p256dh: good, auth: auth, salt: [1, 2, 3])
        }
        #expect(throws: WebPushEncryptionError.tooLarge(3994)) {
            try WebPushEncryption.encrypt(Array(repeating: 0, count: 3994), p256dh: good, auth: auth)
        }
        // The padding some senders keep is tolerated.
        _ = try WebPushEncryption.encrypt([1], p256dh: good, auth: auth + "==")
        #expect(WebPushClient.maximumPayload == 3993)
        #expect(WebPushClient.check(Array(repeating: 0, count: 3993)) == nil)
        #expect(WebPushClient.check(Array(repeating: 0, count: 3994)) != nil)
    }

    // MARK: VAPID

    @Test func vapidTokensAreForTheOriginAndReusedUntilAnHourBeforeTheyExpire() throws {
        #expect(VAPID.origin(of: "https://Push.Example.com:443/wpush/v2/abc?x=1") == "https://push.example.com")
        #expect(VAPID.origin(of: "https://127.0.0.1:8443/push/1") == "https://127.0.0.1:8443")
        #expect(VAPID.origin(of: "https://[::1]:8443/push/1") == "https://[::1]:8443")
        #expect(VAPID.origin(of: "/push/1") == nil && VAPID.origin(of: "not a url") == nil)
        let key = P256.Signing.PrivateKey()
        let vapid = VAPID(key: key, subject: Self.subject)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let origin = "https://push.example.com"
        let first = vapid.token(audience: origin, now: start)
        #expect(vapid.token(audience: origin, now: start + 10 * 3600) == first)
        #expect(vapid.token(audience: "https://other.example", now: start) != first)
        let renewed = vapid.token(audience: origin, now: start + 11 * 3600 + 1)
        #expect(renewed != first)
        let header = "vapid t=\(renewed), k=\(vapid.publicKey)"
        let keyBytes = Array(key.publicKey.x963Representation)
        let later = start + 11 * 3600 + 2
        #expect(WebPushPeer.checkVAPID(header, key: keyBytes, origin: origin, now: later) == nil)
        #expect(WebPushPeer.checkVAPID(header, key: keyBytes, origin: "https://other.example", now: later)?.1 == "BadAudience")
        #expect(WebPushPeer.checkVAPID(header, key: keyBytes, origin: origin, now: later + 12 * 3600)?.1 == "BadExpiry")
        #expect(WebPushPeer.checkVAPID(header, key: keyBytes, origin: origin, now: later - 13 * 3600)?.1 == "BadExpiry")
        let claims = try #require(Base64URL.decode(String(renewed.split(separator: ".")[1])))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any])
        #expect(object["sub"] as? String == Self.subject && object["aud"] as? String == origin)
        #expect(
            (object["exp"] as? NSNumber)?.doubleValue
                == (start + 11 * 3600 + 1 + VAPID.lifetime).timeIntervalSince1970.rounded(.down))
    }

    @Test func theSendersHeadersArePassedOnOnlyWhenValid() {
        func passed(_ headers: [String: String]) -> [String: String] {
            Dictionary(uniqueKeysWithValues: WebPushClient.passedHeaders(headers))
        }
        #expect(passed([:]) == ["ttl": "2419200"])
        #expect(
            passed(["ttl": "0", "urgency": "very-low", "topic": "A-_z09"]) == [
                "ttl": "0", "urgency": "very-low", "topic": "A-_z09",
            ])
        #expect(passed(["ttl": "-1", "urgency": "urgent", "topic": String(repeating: "a", count: 33)]) == ["ttl": "2419200"])
        #expect(passed(["ttl": "1.5", "topic": "a b"]) == ["ttl": "2419200"])
        #expect(passed(["ttl": "99999999999", "topic": "a+b"]) == ["ttl": "2419200"])
    }
}
