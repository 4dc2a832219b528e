import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NotificationHubs

/// Sends notifications to browsers through their push services (RFC 8030): the payload
/// encrypted for the subscription (RFC 8291, `WebPushEncryption`) and POSTed to its
/// `https://` endpoint with a VAPID `Authorization` (RFC 8292, `VAPID`).
///
/// Endpoints come from installations, which anyone holding the Listen key may write, so
/// every request is aimed with care: the endpoint is read by `PushEndpoint`'s strict rules,
/// its host resolved here and each address checked (`OutboundAddress`: this machine and
/// private networks are refused unless the credentials say `allowPrivateEndpoints`), the
/// connection made to that address (`WebPushOrigins`), redirects never followed, and an
/// answer reported by its status and a reason from a fixed list, never by its bytes. Each
/// try has `requestTimeout` in all and reads at most `maximumAnswer` bytes of the answer.
/// At most `perOrigin` tries of one origin and `maximumConcurrent` in all are in flight.
///
/// From the sender's headers (lower-cased names): `ttl` when it is a non-negative integer,
/// otherwise `defaultTTL`; `urgency` when it is one of RFC 8030's four; `topic` when it is
/// at most 32 base64url characters. Anything else is not passed on.
///
/// Answers: any 2xx is delivered, the id the `Location` of the message; 404 and 410 (the
/// subscription is gone), 413 and the other 4xx are refused without a retry; 429 and 5xx
/// are retried (`PushRetries`). A connection that could not be made is tried again; one
/// that broke or timed out is not (the push may have reached the service).
public final class WebPushClient: Sendable {
    public let credentials: PushCredentials.WebPush
    /// Signs every request; its `publicKey` is the `applicationServerKey` to subscribe with.
    public let vapid: VAPID
    private let origins: WebPushOrigins
    let requests: OriginLimit
    let backoff: Backoff
    let retries: Int
    private let requestTimeout: TimeAmount
    /// Tries of one origin in flight at once.
    let perOrigin: Int

    /// The most bytes of an answer read (push services answer with an empty body or a line).
    static let maximumAnswer = 4096

    /// The longest plaintext a subscription can be sent: one 4096-byte `aes128gcm` record
    /// holds 4096 − 86 (salt, record size, key id length, sender key) − 16 (tag) − 1
    /// (delimiter) = 3993 bytes (RFC 8291 §4), and push services need not take more.
    public static let maximumPayload = WebPushEncryption.maximumPlaintext

    /// The `TTL` when the sender gave none (or one that is not a non-negative integer): four
    /// weeks, the longest FCM keeps a message for a browser that is away (other services cut
    /// it to their own longest), so that, as with APNs and FCM without an expiry, the
    /// notification waits for the browser. A sender wanting "now or never" sends `ttl: 0`.
    public static let defaultTTL = 2_419_200

    /// RFC 8030 §5.3's urgencies.
    static let urgencies: Set<String> = ["very-low", "low", "normal", "high"]

    public init(
        _ credentials: PushCredentials.WebPush, maximumConcurrent: Int = 256, perOrigin: Int = 16,
        backoff: Backoff = Backoff(base: 0.5, maximum: 30), retries: Int = 3, requestTimeout: TimeAmount = .seconds(10)
    ) throws {
        self.credentials = credentials
        vapid = VAPID(key: credentials.vapidKey, subject: credentials.subject)
        let connectTimeout = max(1, min(5, requestTimeout.nanoseconds / 1_000_000_000))
        origins = WebPushOrigins(
            caFile: credentials.caFile, allowPrivate: credentials.allowPrivateEndpoints, perOrigin: perOrigin,
            connectTimeout: connectTimeout)
        requests = OriginLimit(maximumConcurrent)
        self.perOrigin = max(1, perOrigin)
        self.backoff = backoff
        self.retries = max(0, retries)
        self.requestTimeout = requestTimeout
    }

    /// Closes the connections; the client cannot send after.
    public func shutdown() async {
        await origins.shutdown()
    }

    /// Why `payload` cannot be sent to a browser, or nil when it can.
    public static func check(_ payload: [UInt8]) -> String? {
        guard payload.count > maximumPayload else { return nil }
        return "the payload is \(payload.count) bytes; Web Push takes at most \(maximumPayload) "
            + "(one 4096-byte encrypted record)"
    }

    /// Sends `payload` to the subscription at `endpoint` with the keys `p256dh` and `auth`
    /// (base64url, as the browser's `PushSubscription` gives them) and the sender's
    /// `headers` (lower-cased names), retrying as `PushRetries` says. A bad endpoint or
    /// key, an address that may not be reached, or a payload over `maximumPayload`, is
    /// refused without a request.
    public func send(endpoint: String, p256dh: String, auth: String, payload: [UInt8], headers: [String: String]) async
        -> PushAnswer
    {
        await PushRetries.run(backoff: backoff, limit: retries) {
            await attempt(endpoint: endpoint, p256dh: p256dh, auth: auth, payload: payload, headers: headers)
        }
    }

    /// The lane of a message: its endpoint's origin (`PushFanOut`).
    static func lane(of endpoint: String) -> String {
        (try? PushEndpoint(endpoint))?.origin ?? ""
    }

    /// One try of a message.
    func attempt(endpoint text: String, p256dh: String, auth: String, payload: [UInt8], headers: [String: String]) async
        -> PushAttempt
    {
        guard let endpoint = try? PushEndpoint(text) else { return .final(.refused(status: 400, reason: "BadEndpoint")) }
        let body: [UInt8]
        do {
            body = try WebPushEncryption.encrypt(payload, p256dh: p256dh, auth: auth)
        } catch {
            if case .tooLarge = error { return .final(.refused(status: 413, reason: error.reason)) }
            return .final(.refused(status: 400, reason: error.reason))
        }
        let lease: WebPushOrigins.Lease
        switch await origins.lease(endpoint) {
        case .success(let lent): lease = lent
        // Not an answer from the service, so it ends nothing: whether a name leads inside
        // this network must not show on the installation (`pushChannelExpired`), and a name
        // that led inside once may lead out again.
        case .failure(.restricted(let kind)): return .final(.unreachable("PrivateAddress (\(kind))"))
        case .failure(.unresolved): return .again(.unreachable("NameNotResolved"), retryAfter: nil)
        }
        defer { origins.release(lease) }
        await lease.requests.acquire()
        defer { lease.requests.release() }
        await requests.acquire(lease.origin, slow: lease.isSlow)
        defer { requests.release() }
        var request = HTTPClientRequest(url: endpoint.url)
        request.method = .POST
        request.headers.add(name: "authorization", value: vapid.authorization(for: endpoint))
        request.headers.add(name: "content-encoding", value: "aes128gcm")
        request.headers.add(name: "content-type", value: "application/octet-stream")
        for (name, value) in Self.passedHeaders(headers) { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            // The whole try, the answer's body included, within `requestTimeout`.
            let deadline = ContinuousClock.now + .nanoseconds(requestTimeout.nanoseconds)
            let (client, sent) = (lease.client, request)
            let response = try await PushHTTP.before(deadline) {
                let response = try await client.execute(sent, deadline: .now() + TimeAmount(deadline - ContinuousClock.now))
                // Read (and dropped) only so that the connection can serve the next request.
                _ = try? await response.body.collect(upTo: Self.maximumAnswer)
                return (status: Int(response.status.code), headers: response.headers)
            }
            lease.noteAnswered(true)
            let status = response.status
            if (200..<300).contains(status) {
                // The id is the service's `Location`, kept only when it is a short printable line.
                let location = response.headers.first(name: "location").flatMap { text in
                    text.utf8.count <= 512 && text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) ? text : nil
                }
                return .final(.delivered(id: location))
            }
            let answer = PushAnswer.refused(status: status, reason: Self.reason(status: status))
            guard PushRetries.isTransient(status) else { return .final(answer) }
            let retryAfter = PushRetries.retryAfter(response.headers.first(name: "retry-after"))
            return .again(answer, retryAfter: retryAfter)
        } catch {
            let attempt = Self.failedTry(error)
            if case .unreachable(let why) = attempt.answer, ["Timeout", "ConnectTimeout"].contains(why) {
                lease.noteAnswered(false)
            }
            return attempt
        }
    }

    /// A request that got no answer: one that never left (no connection) is tried again; one
    /// that may have reached the service is not.
    static func failedTry(_ error: any Error) -> PushAttempt {
        if error is PushHTTP.DeadlinePassed { return .final(.unreachable("Timeout")) }
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout: return .again(.unreachable("ConnectTimeout"), retryAfter: nil)
            case .deadlineExceeded, .readTimeout, .writeTimeout: return .final(.unreachable("Timeout"))
            case .remoteConnectionClosed: return .final(.unreachable("ConnectionClosed"))
            default: return .final(.unreachable("RequestFailed"))
            }
        }
        if error is NIOSSLError || error is BoringSSLError { return .again(.unreachable("TLSFailed"), retryAfter: nil) }
        if error is NIOConnectionError || error is IOError { return .again(.unreachable("ConnectFailed"), retryAfter: nil) }
        return .final(.unreachable("RequestFailed"))
    }

    /// `TTL`, `Urgency` and `Topic` as the service takes them, from the sender's headers.
    static func passedHeaders(_ headers: [String: String]) -> [(String, String)] {
        var passed: [(String, String)] = []
        if let text = headers["ttl"], (1...10).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let ttl = Int(text)
        {
            passed.append(("ttl", String(ttl)))
        } else {
            passed.append(("ttl", String(defaultTTL)))
        }
        if let urgency = headers["urgency"], urgencies.contains(urgency) { passed.append(("urgency", urgency)) }
        if let topic = headers["topic"], (1...32).contains(topic.utf8.count), topic.utf8.allSatisfy(isBase64URL) {
            passed.append(("topic", topic))
        }
        return passed
    }

    /// The reason of a refusal: a name for the status, from a fixed list. The answer's
    /// bytes are never passed on: a service chosen by whoever wrote the installation could
    /// otherwise read its way into outcomes (and `explain`).
    static func reason(status: Int) -> String {
        switch status {
        case 300..<400: return "Redirect"
        case 400: return "BadRequest"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "NotFound"
        case 410: return "Gone"
        case 413: return "PayloadTooLarge"
        case 429: return "TooManyRequests"
        case 400..<500: return "ClientError"
        case 500: return "InternalServerError"
        case 502: return "BadGateway"
        case 503: return "ServiceUnavailable"
        case 504: return "GatewayTimeout"
        case 500..<600: return "ServerError"
        default: return "UnexpectedStatus"
        }
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D
            || byte == 0x5F
    }
}
