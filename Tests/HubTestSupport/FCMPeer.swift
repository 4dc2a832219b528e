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
import _CryptoExtras

/// Google's token endpoint and FCM v1 on loopback, as they behave toward a server holding a
/// service account: HTTPS (HTTP/2 or HTTP/1.1) with a certificate made at test time.
/// `POST /token` takes the service-account grant, checks the RS256 assertion's signature
/// with the account's public key and its `iss`, `aud`, `scope` and times, and issues an
/// access token it remembers. `POST /v1/projects/{id}/messages:send` checks the bearer token
/// is one it issued and still valid, the project, and that the message has a `token` (and
/// no other target), then answers as scripted for the device, or for all.
public final class FCMPeer: Sendable {
    /// How the peer answers one device.
    public enum Behaviour: Sendable {
        case accept
        /// HTTP `code` with FCM's error body: `error.status` = `status`, and an FcmError
        /// detail with `errorCode` when given.
        case refuse(code: Int, status: String, errorCode: String?)
        /// 401 UNAUTHENTICATED, the access token declared expired, to the first token the
        /// behaviour meets; tokens issued after pass.
        case expireFirstToken
        /// `status` (429, 500, 503) with `Retry-After: retryAfter`, `times` times, then 200.
        case fail(status: Int, times: Int, retryAfter: String?)

        public static let unregistered = Behaviour.refuse(code: 404, status: "NOT_FOUND", errorCode: "UNREGISTERED")
        public static let invalidArgument = Behaviour.refuse(
            code: 400, status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT")
        public static let senderIdMismatch = Behaviour.refuse(
            code: 403, status: "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH")
    }

    /// One `messages:send` request as received.
    public struct Received: Sendable {
        /// `message.token`, when there was one.
        public let device: String?
        /// The request's `message` object.
        public let message: JSONValue?
        public let body: String
        /// The bearer token it carried.
        public let accessToken: String?
        public let answered: Int
    }

    private struct Tokens {
        /// Issued access tokens and when each expires.
        var issued: [String: Date] = [:]
        var revoked: Set<String> = []
        /// The one token `.expireFirstToken` expired.
        var expiredFirst: String?
        var assertionsRefused = 0
    }

    private let key: _RSA.Signing.PublicKey
    private let projectId: String
    private let clientEmail: String
    private let lifetime: Int
    private let behaviours: Mutex<[String: Behaviour]>
    private let otherwise: Mutex<Behaviour>
    private let tokens = Mutex(Tokens())
    private let log = Mutex<[Received]>([])
    private let tokenURI = Mutex<String?>(nil)
    private let folder: URL
    private let delay: Duration
    private let concurrency = Mutex<(now: Int, peak: Int)>((0, 0))

    /// `key` checks the assertions (the service account's public half); access tokens last
    /// `lifetime` seconds; `behaviours` by device token, `otherwise` for the rest; `delay`:
    /// how long each `messages:send` answer takes (so that requests overlap).
    public init(
        key: _RSA.Signing.PublicKey, projectId: String, clientEmail: String, lifetime: Int = 3600,
        behaviours: [String: Behaviour] = [:], otherwise: Behaviour = .accept, delay: Duration = .zero
    ) {
        self.key = key
        self.projectId = projectId
        self.clientEmail = clientEmail
        self.lifetime = lifetime
        self.behaviours = Mutex(behaviours)
        self.otherwise = Mutex(otherwise)
        self.delay = delay
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-peer-\(UUID().uuidString)")
    }

    /// A peer for `account`'s key and ids.
    public convenience init(
        account: ServiceAccount, lifetime: Int = 3600, behaviours: [String: Behaviour] = [:], otherwise: Behaviour = .accept,
        delay: Duration = .zero
    ) {
        self.init(
            key: account.key.publicKey, projectId: account.projectId, clientEmail: account.clientEmail, lifetime: lifetime,
            behaviours: behaviours, otherwise: otherwise, delay: delay)
    }

    /// Every `messages:send` request so far, in order.
    public var received: [Received] { log.withLock { $0 } }

    /// How many access tokens the token endpoint issued.
    public var accessTokensIssued: Int { tokens.withLock { $0.issued.count } }

    /// How many assertions the token endpoint refused.
    public var assertionsRefused: Int { tokens.withLock { $0.assertionsRefused } }

    /// The most `messages:send` requests it was answering at once.
    public var peakConcurrency: Int { concurrency.withLock { $0.peak } }

    /// The certificate clients must trust (the peer's own, self-signed).
    public var certificateFile: String { folder.appendingPathComponent(SelfSignedCertificate.certificateFile).path }

    /// Scripts `device`'s answers from now on.
    public func script(_ device: String, _ behaviour: Behaviour) { behaviours.withLock { $0[device] = behaviour } }

    /// Serves while `body` runs, given the base URL (`https://127.0.0.1:PORT`; the token
    /// endpoint is its `/token`); then stops.
    public func serve<T>(_ body: (String) async throws -> T) async throws -> T {
        let router = Router()
        router.post("/token") { request, _ -> Response in
            try await self.issue(request)
        }
        router.post("/v1/projects/:project/messages:send") { request, context -> Response in
            try await self.answer(request, project: context.parameters.get("project") ?? "")
        }
        return try await serveOverTLS(router, folder: folder, label: "fcm-peer") { url in
            tokenURI.withLock { $0 = "\(url)/token" }
            return try await body(url)
        }
    }

    // MARK: The token endpoint

    private func issue(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: 16 << 10)
        let form = Self.form(String(buffer: body))
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return Self.json(400, #"{"error":"unsupported_grant_type","error_description":"Invalid grant_type."}"#)
        }
        if let problem = form["assertion"].map(check) ?? "No assertion." {
            tokens.withLock { $0.assertionsRefused += 1 }
            return Self.json(400, #"{"error":"invalid_grant","error_description":"\#(problem)"}"#)
        }
        let token = "ya29.peer-\(UUID().uuidString)"
        tokens.withLock { $0.issued[token] = Date().addingTimeInterval(Double(lifetime)) }
        return Self.json(200, #"{"access_token":"\#(token)","expires_in":\#(lifetime),"token_type":"Bearer"}"#)
    }

    /// What is wrong with the assertion, or nil when its signature and claims are right.
    private func check(_ assertion: String) -> String? {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let header = Base64URL.decode(parts[0]).flatMap({ try? JSONValue(parsing: $0) }),
            let claims = Base64URL.decode(parts[1]).flatMap({ try? JSONValue(parsing: $0) }),
            let signature = Base64URL.decode(parts[2])
        else { return "Invalid JWT." }
        guard header["alg"]?.stringValue == "RS256", header["typ"]?.stringValue == "JWT" else { return "Invalid JWT header." }
        guard
            key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: Array((parts[0] + "." + parts[1]).utf8),
                padding: .insecurePKCS1v1_5)
        else { return "Invalid JWT Signature." }
        guard claims["iss"]?.stringValue == clientEmail else { return "Invalid issuer." }
        guard let audience = claims["aud"]?.stringValue, audience == tokenURI.withLock({ $0 }) else {
            return "Invalid JWT: audience."
        }
        let scopes = (claims["scope"]?.stringValue ?? "").split(separator: " ")
        guard scopes.contains("https://www.googleapis.com/auth/firebase.messaging") else { return "Invalid scope." }
        guard case .number(let iatText)? = claims["iat"], case .number(let expText)? = claims["exp"],
            let iat = Double(iatText), let exp = Double(expText)
        else { return "Invalid JWT: iat and exp are required." }
        let now = Date().timeIntervalSince1970
        guard iat <= now + 60, exp > now, exp > iat, exp - iat <= 3600 else {
            return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
        }
        return nil
    }

    // MARK: FCM

    private func answer(_ request: Request, project: String) async throws -> Response {
        concurrency.withLock {
            $0.now += 1
            $0.peak = max($0.peak, $0.now)
        }
        defer { concurrency.withLock { $0.now -= 1 } }
        if delay > .zero { try await Task.sleep(for: delay) }
        let body = try await request.body.collect(upTo: 64 << 10)
        let authorization = request.headers[.authorization] ?? ""
        let bearer = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst(7)) : nil
        let message = (try? JSONValue(parsing: body.readableBytesView))?["message"]
        let device = message?["token"]?.stringValue
        let (status, answer, retryAfter) = verdict(bearer: bearer, project: project, message: message, device: device)
        log.withLock {
            $0.append(
                Received(device: device, message: message, body: String(buffer: body), accessToken: bearer, answered: status))
        }
        var response = Self.json(status, answer)
        if let retryAfter { response.headers[HTTPField.Name("retry-after")!] = retryAfter }
        return response
    }

    private func verdict(bearer: String?, project: String, message: JSONValue?, device: String?) -> (Int, String, String?) {
        let valid = bearer.map { token in
            tokens.withLock { $0.issued[token].map { $0 > Date() } == true && !$0.revoked.contains(token) }
        }
        guard let bearer, valid == true else {
            return (401, Self.error(401, "UNAUTHENTICATED", nil, "Request had invalid authentication credentials."), nil)
        }
        guard project == projectId else {
            return (403, Self.error(403, "PERMISSION_DENIED", nil, "Permission denied on the project."), nil)
        }
        guard let message, message.objectMembers != nil, let device, !device.isEmpty,
            message["topic"] == nil, message["condition"] == nil
        else {
            return (400, Self.error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "The message needs one token."), nil)
        }
        let ok = #"{"name":"projects/\#(projectId)/messages/\#(UUID().uuidString)"}"#
        switch behaviours.withLock({ $0[device] }) ?? otherwise.withLock({ $0 }) {
        case .accept: return (200, ok, nil)
        case .refuse(let status, let name, let code):
            return (status, Self.error(status, name, code, "Scripted refusal."), nil)
        case .expireFirstToken:
            let first = tokens.withLock { tokens -> Bool in
                if tokens.expiredFirst == nil {
                    tokens.expiredFirst = bearer
                    tokens.revoked.insert(bearer)
                }
                return tokens.expiredFirst == bearer
            }
            guard first else { return (200, ok, nil) }
            return (401, Self.error(401, "UNAUTHENTICATED", nil, "Request had invalid authentication credentials."), nil)
        case .fail(let status, let times, let retryAfter):
            guard times > 0 else { return (200, ok, nil) }
            let next = Behaviour.fail(status: status, times: times - 1, retryAfter: retryAfter)
            if behaviours.withLock({ $0[device] }) != nil {
                behaviours.withLock { $0[device] = next }
            } else {
                otherwise.withLock { $0 = next }
            }
            let name = status == 429 ? "RESOURCE_EXHAUSTED" : status == 503 ? "UNAVAILABLE" : "INTERNAL"
            let code = status == 429 ? "QUOTA_EXCEEDED" : name
            return (status, Self.error(status, name, code, "Scripted failure."), retryAfter)
        }
    }

    // MARK: Helpers

    /// FCM's error body.
    static func error(_ code: Int, _ status: String, _ errorCode: String?, _ message: String) -> String {
        let detail = errorCode.map {
            #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}]"#
        }
        return #"{"error":{"code":\#(code),"message":"\#(message)","status":"\#(status)"\#(detail ?? "")}}"#
    }

    static func json(_ status: Int, _ text: String) -> Response {
        var fields = HTTPFields()
        fields[.contentType] = "application/json; charset=UTF-8"
        return Response(status: .init(code: status), headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// An `application/x-www-form-urlencoded` body's fields.
    static func form(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String? { part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard parts.count == 2, let name = decode(parts[0]), let value = decode(parts[1]) else { continue }
            fields[name] = value
        }
        return fields
    }
}
