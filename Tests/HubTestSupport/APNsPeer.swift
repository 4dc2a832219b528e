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

/// APNs on loopback, as Apple's servers behave toward a provider (wire spec §11): HTTP/2
/// over TLS with a certificate made at test time, `POST /3/device/<token>`, the provider
/// token's ES256 signature checked with the key's public half, its key id, team id and age,
/// `apns-topic` checked, and per device a scripted answer.
public final class APNsPeer: Sendable {
    /// How the peer answers one device.
    public enum Behaviour: Sendable {
        case accept
        case refuse(status: Int, reason: String)
        /// 403 ExpiredProviderToken to every token issued before the first request it sees.
        case expireFirstToken
        /// `status` (429, 500, 503) with `Retry-After: retryAfter`, `times` times, then 200.
        case fail(status: Int, times: Int, retryAfter: String?)
    }

    /// One request as received.
    public struct Received: Sendable {
        public let device: String
        public let headers: [String: String]
        public let body: String
        /// `https` over HTTP/2 (its `:scheme`); `http` when HTTP/1.1 was spoken.
        public let scheme: String?
        public let answered: Int
    }

    private let key: P256.Signing.PublicKey
    private let keyId: String
    private let teamId: String
    private let topic: String
    private let behaviours: Mutex<[String: Behaviour]>
    private let log = Mutex<[Received]>([])
    private let expiredTokens = Mutex<Set<String>>([])
    private let folder: URL
    private let delay: Duration
    private let idleTimeout: Duration?
    private let concurrency = Mutex<(now: Int, peak: Int)>((0, 0))

    /// `delay`: how long each answer takes (so that requests overlap); `idleTimeout`: how long
    /// a connection without streams stays open (GOAWAY, then closed).
    public init(
        key: P256.Signing.PublicKey, keyId: String, teamId: String, topic: String, behaviours: [String: Behaviour] = [:],
        delay: Duration = .zero, idleTimeout: Duration? = nil
    ) {
        self.delay = delay
        self.idleTimeout = idleTimeout
        self.key = key
        self.keyId = keyId
        self.teamId = teamId
        self.topic = topic
        self.behaviours = Mutex(behaviours)
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("apns-peer-\(UUID().uuidString)")
    }

    /// Until `open()`, requests wait before they are answered (a provider that is slow for
    /// as long as a test needs; `serve` opens it before it stops).
    public func hold() { gate.close() }
    public func open() { gate.open() }
    private let gate = Gate()

    /// From now on, answers `device` (hex, lower-case) so; `nil` accepts it again.
    public func behave(_ device: String, _ behaviour: Behaviour?) {
        behaviours.withLock { $0[device] = behaviour }
    }

    /// The most requests it was answering at once.
    public var peakConcurrency: Int { concurrency.withLock { $0.peak } }

    /// Every request so far, in order.
    public var received: [Received] { log.withLock { $0 } }

    /// The certificate clients must trust (the peer's own, self-signed).
    public var certificateFile: String { folder.appendingPathComponent(SelfSignedCertificate.certificateFile).path }

    /// Serves while `body` runs, given the base URL (`https://127.0.0.1:PORT`); then stops.
    public func serve<T>(_ body: (String) async throws -> T) async throws -> T {
        let router = Router()
        router.post("/3/device/:token") { request, context -> Response in
            try await self.answer(request, device: context.parameters.get("token") ?? "")
        }
        return try await serveOverTLS(router, folder: folder, label: "apns-peer", idleTimeout: idleTimeout) { url in
            // Held requests are let go before the peer stops, which waits for them.
            defer { gate.open() }
            return try await body(url)
        }
    }

    private func answer(_ request: Request, device: String) async throws -> Response {
        concurrency.withLock {
            $0.now += 1
            $0.peak = max($0.peak, $0.now)
        }
        defer { concurrency.withLock { $0.now -= 1 } }
        if delay > .zero { try await Task.sleep(for: delay) }
        await gate.pass()
        let body = try await request.body.collect(upTo: 8192)
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        let (status, reason, retryAfter) = verdict(headers: headers, device: device, bodyBytes: body.readableBytes)
        log.withLock {
            $0.append(
                Received(
                    device: device, headers: headers, body: String(buffer: body), scheme: request.head.scheme,
                    answered: status))
        }
        var fields = HTTPFields()
        if status == 200 {
            fields[HTTPField.Name("apns-id")!] = headers["apns-id"] ?? UUID().uuidString
            return Response(status: .ok, headers: fields)
        }
        if let retryAfter { fields[HTTPField.Name("retry-after")!] = retryAfter }
        fields[.contentType] = "application/json"
        return Response(
            status: .init(code: status), headers: fields,
            body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"reason":"\#(reason)"}"#)))
    }

    private func verdict(headers: [String: String], device: String, bodyBytes: Int) -> (Int, String, String?) {
        guard let authorization = headers["authorization"], authorization.hasPrefix("bearer ") else {
            return (403, "MissingProviderToken", nil)
        }
        let token = String(authorization.dropFirst(7))
        guard let issuedAt = check(token) else { return (403, "InvalidProviderToken", nil) }
        if Date().timeIntervalSince1970 - Double(issuedAt) > 3600 { return (403, "ExpiredProviderToken", nil) }
        guard let given = headers["apns-topic"] else { return (400, "MissingTopic", nil) }
        guard given == topic else { return (400, "DeviceTokenNotForTopic", nil) }
        guard !device.isEmpty, device.utf8.count % 2 == 0, device.allSatisfy(\.isHexDigit) else {
            return (400, "BadDeviceToken", nil)
        }
        guard bodyBytes > 0 else { return (400, "PayloadEmpty", nil) }
        guard bodyBytes <= 4096 else { return (413, "PayloadTooLarge", nil) }
        switch behaviours.withLock({ $0[device] }) ?? .accept {
        case .accept: return (200, "", nil)
        case .refuse(let status, let reason): return (status, reason, nil)
        case .expireFirstToken:
            let first = expiredTokens.withLock { expired -> Bool in
                if expired.isEmpty { expired.insert(token) }
                return expired.contains(token)
            }
            return first ? (403, "ExpiredProviderToken", nil) : (200, "", nil)
        case .fail(let status, let times, let retryAfter):
            guard times > 0 else { return (200, "", nil) }
            behaviours.withLock { $0[device] = .fail(status: status, times: times - 1, retryAfter: retryAfter) }
            return (status, status == 429 ? "TooManyRequests" : "InternalServerError", retryAfter)
        }
    }

    /// The token's `iat` when its header, claims and ES256 signature are right.
    private func check(_ token: String) -> Int64? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let header = Base64URL.decode(parts[0]), let claims = Base64URL.decode(parts[1]),
            let signatureBytes = Base64URL.decode(parts[2]),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8)),
            let headerObject = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any],
            headerObject["alg"] as? String == "ES256", headerObject["kid"] as? String == keyId,
            let claimsObject = try? JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any],
            claimsObject["iss"] as? String == teamId, let iat = (claimsObject["iat"] as? NSNumber)?.int64Value
        else { return nil }
        return iat
    }
}

/// Open, or closed with those who arrived waiting until it opens.
final class Gate: Sendable {
    private let state = Mutex<(closed: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func close() { state.withLock { $0.closed = true } }

    func open() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closed = false
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    func pass() async {
        await withCheckedContinuation { continuation in
            let go = state.withLock { state -> Bool in
                guard state.closed else { return true }
                state.waiting.append(continuation)
                return false
            }
            if go { continuation.resume() }
        }
    }
}
