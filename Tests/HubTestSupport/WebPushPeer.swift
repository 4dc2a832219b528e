import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdHTTP2
import LocalHub
import Logging
import NIOCore
import NIOSSL
import NotificationHubs
import Synchronization

/// A browser's push service on loopback, and the browser too: over TLS with a certificate
/// made at test time it takes `POST /push/<id>` as a push service does (RFC 8030), checks the
/// VAPID token (RFC 8292) with the key it names, which must be the one subscribed with, and
/// `TTL` and `Content-Encoding`, then decrypts the message with the subscription's private
/// key as the browser would (RFC 8291, written here apart from the client's encryption) and
/// keeps the plaintext. Answers as scripted, per subscription or for all.
public final class WebPushPeer: Sendable {
    /// How the peer answers a message.
    public enum Behaviour: Sendable {
        /// 201 with a `Location`, once the message decrypts.
        case accept
        /// `status` (404, 410, 413…), with `reason` as the body when given.
        case refuse(status: Int, reason: String?)
        /// `status` (429, 503) with `Retry-After: retryAfter`, `times` times, then accepted.
        case fail(status: Int, times: Int, retryAfter: String?)
    }

    /// What a browser gives an application server (`PushSubscription.toJSON()`).
    public struct Subscription: Sendable {
        public let id: String
        public let endpoint: String
        public let p256dh: String
        public let auth: String
    }

    /// One request as received.
    public struct Received: Sendable {
        /// The subscription id of the path.
        public let subscription: String
        /// Lower-cased names.
        public let headers: [String: String]
        /// The decrypted message, when it was accepted.
        public let plaintext: [UInt8]?
        public let answered: Int
        /// Why it was refused (the body sent); empty when accepted.
        public let reason: String
    }

    private struct Keys: Sendable {
        let key: P256.KeyAgreement.PrivateKey
        let auth: [UInt8]
        var behaviour: Behaviour?
    }

    private let vapidKey: [UInt8]
    private let behaviour: Mutex<Behaviour>
    private let subscriptions = Mutex<[String: Keys]>([:])
    private let log = Mutex<[Received]>([])
    private let base = Mutex<String?>(nil)
    private let folder: URL
    private let delay: Duration
    private let concurrency = Mutex<(now: Int, peak: Int)>((0, 0))

    /// `vapidKey`: the application server's key the subscriptions are made for;
    /// `behaviour`: how subscriptions without their own answer; `delay`: how long each
    /// answer takes (so that requests overlap).
    public init(vapidKey: P256.Signing.PublicKey, behaviour: Behaviour = .accept, delay: Duration = .zero) {
        self.vapidKey = Array(vapidKey.x963Representation)
        self.behaviour = Mutex(behaviour)
        self.delay = delay
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("webpush-peer-\(UUID().uuidString)")
    }

    /// Every request so far, in order.
    public var received: [Received] { log.withLock { $0 } }

    /// The most requests it was answering at once.
    public var peakConcurrency: Int { concurrency.withLock { $0.peak } }

    /// The certificate clients must trust (the peer's own, self-signed).
    public var certificateFile: String { folder.appendingPathComponent(SelfSignedCertificate.certificateFile).path }

    /// A new subscription, as a browser makes one: a P-256 key pair and 16 random bytes of
    /// auth secret, the endpoint on this peer. Only while the peer serves (the endpoint names
    /// its port).
    public func subscribe(_ behaviour: Behaviour? = nil) -> Subscription {
        guard let base = base.withLock({ $0 }) else { preconditionFailure("subscribe while the peer serves") }
        let id = UUID().uuidString.lowercased()
        let keys = Keys(
            key: P256.KeyAgreement.PrivateKey(), auth: (0..<16).map { _ in UInt8.random(in: .min ... .max) },
            behaviour: behaviour)
        subscriptions.withLock { $0[id] = keys }
        return Subscription(
            id: id, endpoint: "\(base)/push/\(id)", p256dh: Base64URL.encode(Array(keys.key.publicKey.x963Representation)),
            auth: Base64URL.encode(keys.auth))
    }

    /// Changes how every subscription without its own behaviour is answered.
    public func setBehaviour(_ behaviour: Behaviour) { self.behaviour.withLock { $0 = behaviour } }

    /// Serves while `body` runs, given the base URL (`https://127.0.0.1:PORT`); then stops.
    public func serve<T>(_ body: (String) async throws -> T) async throws -> T {
        let router = Router()
        router.post("/push/:id") { request, context -> Response in
            try await self.answer(request, subscription: context.parameters.get("id") ?? "")
        }
        return try await serveOverTLS(router, folder: folder, label: "webpush-peer") { url in
            base.withLock { $0 = url }
            defer { base.withLock { $0 = nil } }
            return try await body(url)
        }
    }

    private func answer(_ request: Request, subscription id: String) async throws -> Response {
        concurrency.withLock {
            $0.now += 1
            $0.peak = max($0.peak, $0.now)
        }
        defer { concurrency.withLock { $0.now -= 1 } }
        if delay > .zero { try await Task.sleep(for: delay) }
        let body = Array((try await request.body.collect(upTo: 64 << 10)).readableBytesView)
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        let verdict = self.verdict(headers: headers, subscription: id, body: body)
        log.withLock {
            $0.append(
                Received(
                    subscription: id, headers: headers, plaintext: verdict.plaintext, answered: verdict.status,
                    reason: verdict.reason))
        }
        var fields = HTTPFields()
        if verdict.status == 201 {
            fields[.location] = "\(base.withLock { $0 } ?? "")/message/\(UUID().uuidString.lowercased())"
            return Response(status: .created, headers: fields)
        }
        if let retryAfter = verdict.retryAfter { fields[HTTPField.Name("retry-after")!] = retryAfter }
        fields[.contentType] = "text/plain"
        return Response(
            status: .init(code: verdict.status), headers: fields,
            body: ResponseBody(byteBuffer: ByteBuffer(string: verdict.reason)))
    }

    private struct Verdict {
        var status: Int
        var reason: String = ""
        var retryAfter: String? = nil
        var plaintext: [UInt8]? = nil
    }

    private func verdict(headers: [String: String], subscription id: String, body: [UInt8]) -> Verdict {
        guard let origin = base.withLock({ $0 }) else { return Verdict(status: 503, reason: "NotServing") }
        if let (status, reason) = Self.checkVAPID(headers["authorization"], key: vapidKey, origin: origin, now: Date()) {
            return Verdict(status: status, reason: reason)
        }
        guard let keys = subscriptions.withLock({ $0[id] }) else { return Verdict(status: 404, reason: "NoSuchSubscription") }
        guard let ttl = headers["ttl"], !ttl.isEmpty, ttl.allSatisfy(\.isASCII), ttl.allSatisfy(\.isNumber) else {
            return Verdict(status: 400, reason: "MissingTTL")
        }
        guard headers["content-encoding"] == "aes128gcm" else { return Verdict(status: 415, reason: "UnsupportedEncoding") }
        guard body.count <= 4096 else { return Verdict(status: 413, reason: "PayloadTooLarge") }
        switch next(for: id, keys) {
        case .accept:
            guard let plaintext = Self.decrypt(body, key: keys.key, auth: keys.auth) else {
                return Verdict(status: 400, reason: "DecryptionFailed")
            }
            return Verdict(status: 201, plaintext: plaintext)
        case .refuse(let status, let reason): return Verdict(status: status, reason: reason ?? "")
        case .fail(let status, _, let retryAfter):
            return Verdict(status: status, reason: status == 429 ? "TooManyRequests" : "Unavailable", retryAfter: retryAfter)
        }
    }

    /// The behaviour for this message; a `fail` counts one down (to `accept` at zero).
    private func next(for id: String, _ keys: Keys) -> Behaviour {
        func step(_ behaviour: inout Behaviour) -> Behaviour {
            guard case .fail(let status, let times, let retryAfter) = behaviour else { return behaviour }
            guard times > 0 else { return .accept }
            behaviour = .fail(status: status, times: times - 1, retryAfter: retryAfter)
            return .fail(status: status, times: times, retryAfter: retryAfter)
        }
        if keys.behaviour != nil {
            return subscriptions.withLock { subscriptions in
                guard var own = subscriptions[id]?.behaviour else { return .accept }
                let now = step(&own)
                subscriptions[id]?.behaviour = own
                return now
            }
        }
        return behaviour.withLock { step(&$0) }
    }
}
