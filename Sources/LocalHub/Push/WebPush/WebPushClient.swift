import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import NotificationHubs

/// Sends notifications to browsers through their push services (RFC 8030): the payload
/// encrypted for the subscription (RFC 8291, `WebPushEncryption`) and POSTed to its
/// `https://` endpoint with a VAPID `Authorization` (RFC 8292, `VAPID`), at most
/// `maximumConcurrent` requests in flight.
///
/// From the sender's headers (lower-cased names): `ttl` when it is a non-negative integer,
/// otherwise `defaultTTL`; `urgency` when it is one of RFC 8030's four; `topic` when it is
/// at most 32 base64url characters. Anything else is not passed on.
///
/// Answers: any 2xx is delivered, the id the `Location` of the message; 404 and 410 (the
/// subscription is gone), 413 and the other 4xx are refused without a retry; 429 and 5xx
/// are retried with the shared jittered backoff, honouring `Retry-After` (up to a minute),
/// at most `retries` times. A connection that could not be made or broke is not retried
/// (the push may have reached the service).
public final class WebPushClient: Sendable {
    public let credentials: ProviderCredentials.WebPush
    /// Signs every request; its `publicKey` is the `applicationServerKey` to subscribe with.
    public let vapid: VAPID
    private let http: HTTPClient
    private let requests: StreamLimit
    private let backoff: Backoff
    private let retries: Int

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
        _ credentials: ProviderCredentials.WebPush, maximumConcurrent: Int = 100,
        backoff: Backoff = Backoff(base: 0.5, maximum: 30), retries: Int = 3
    ) throws {
        http = ProviderHTTP.client(trusting: credentials.caFile)
        self.credentials = credentials
        vapid = VAPID(key: credentials.vapidKey, subject: credentials.subject)
        requests = StreamLimit(maximumConcurrent)
        self.backoff = backoff
        self.retries = max(0, retries)
    }

    /// Closes the connections; the client cannot send after.
    public func shutdown() async {
        try? await http.shutdown()
    }

    /// Why `payload` cannot be sent to a browser, or nil when it can.
    public static func check(_ payload: [UInt8]) -> String? {
        guard payload.count > maximumPayload else { return nil }
        return "the payload is \(payload.count) bytes; Web Push takes at most \(maximumPayload) "
            + "(one 4096-byte encrypted record)"
    }

    /// Sends `payload` to the subscription at `endpoint` with the keys `p256dh` and `auth`
    /// (base64url, as the browser's `PushSubscription` gives them) and the sender's
    /// `headers` (lower-cased names). A bad endpoint or key, or a payload over
    /// `maximumPayload`, is refused without a request.
    public func send(endpoint: String, p256dh: String, auth: String, payload: [UInt8], headers: [String: String]) async
        -> ProviderAnswer
    {
        guard Self.isPushEndpoint(endpoint), credentials.allowPrivateEndpoints || !Self.isPrivate(endpoint),
            let authorization = vapid.authorization(for: endpoint)
        else {
            return .refused(status: 400, reason: "BadEndpoint")
        }
        let body: [UInt8]
        do {
            body = try WebPushEncryption.encrypt(payload, p256dh: p256dh, auth: auth)
        } catch {
            if case .tooLarge = error { return .refused(status: 413, reason: error.reason) }
            return .refused(status: 400, reason: error.reason)
        }
        await requests.acquire()
        defer { requests.release() }
        var retries = ProviderRetries(backoff: backoff, limit: self.retries)
        while true {
            var request = HTTPClientRequest(url: endpoint)
            request.method = .POST
            // Asked again on every try: a retry after a long wait may need a renewed token.
            request.headers.add(name: "authorization", value: vapid.authorization(for: endpoint) ?? authorization)
            request.headers.add(name: "content-encoding", value: "aes128gcm")
            request.headers.add(name: "content-type", value: "application/octet-stream")
            for (name, value) in Self.passedHeaders(headers) { request.headers.add(name: name, value: value) }
            request.body = .bytes(ByteBuffer(bytes: body))
            let status: Int
            let answerBody: [UInt8]
            let retryAfter: Double?
            do {
                let response = try await http.execute(request, timeout: .seconds(30))
                status = Int(response.status.code)
                if (200..<300).contains(status) {
                    // Delivered, whatever becomes of the (empty) body.
                    _ = try? await response.body.collect(upTo: 64 << 10)
                    return .delivered(id: response.headers.first(name: "location"))
                }
                answerBody = (try? await response.body.collect(upTo: 64 << 10)).map { Array($0.readableBytesView) } ?? []
                retryAfter = response.headers.first(name: "retry-after").flatMap(Double.init)
            } catch {
                // Not retried: the message may have reached the service before the
                // connection failed. (The HTTP client retries making a connection itself.)
                return .unreachable(String(describing: error).prefix(200).description)
            }
            if ProviderRetries.isTransient(status), await retries.another(retryAfter: retryAfter) { continue }
            return .refused(status: status, reason: Self.reason(status: status, body: answerBody))
        }
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

    /// An absolute `https://` URL with a host: the only endpoints a browser subscribes with.
    /// Whether the endpoint names this machine or a private or link-local network by name or
    /// address literal (`localhost`, 127/8, 10/8, 172.16/12, 192.168/16, 169.254/16, 0/8,
    /// `::1`, `fc00::/7`, `fe80::/10`). A name that resolves there is not caught.
    static func isPrivate(_ endpoint: String) -> Bool {
        guard let host = URL(string: endpoint)?.host?.lowercased() else { return true }
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if bare == "localhost" || bare.hasSuffix(".localhost") || bare == "::1" || bare == "::" { return true }
        if bare.contains(":") {
            return bare.hasPrefix("fc") || bare.hasPrefix("fd") || bare.hasPrefix("fe8") || bare.hasPrefix("::ffff:")
        }
        let octets = bare.split(separator: ".").map { Int($0) }
        guard octets.count == 4, let a = octets[0], let b = octets[1], octets.allSatisfy({ $0 != nil }) else { return false }
        return a == 127 || a == 10 || a == 0 || (a == 172 && (16...31).contains(b)) || (a == 192 && b == 168)
            || (a == 169 && b == 254)
    }

    static func isPushEndpoint(_ endpoint: String) -> Bool {
        guard endpoint.utf8.count <= 4096, let url = URL(string: endpoint), url.scheme?.lowercased() == "https",
            let origin = VAPID.origin(of: endpoint)
        else { return false }
        return origin.hasPrefix("https://")
    }

    /// A short reason for a refusal: 413 is always `PayloadTooLarge`; otherwise the body when
    /// it is a short line of text (services often say why), else the status's name.
    static func reason(status: Int, body: [UInt8]) -> String {
        if status == 413 { return "PayloadTooLarge" }
        var text = body[...]
        while let first = text.first, first == 0x20 || first == 0x0A || first == 0x0D || first == 0x09 { text.removeFirst() }
        while let last = text.last, last == 0x20 || last == 0x0A || last == 0x0D || last == 0x09 { text.removeLast() }
        if (1...64).contains(text.count), text.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            return String(decoding: text, as: UTF8.self)
        }
        switch status {
        case 400: return "BadRequest"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "NotFound"
        case 410: return "Gone"
        case 429: return "TooManyRequests"
        case 500: return "InternalServerError"
        case 502: return "BadGateway"
        case 503: return "ServiceUnavailable"
        default: return "HTTP \(status)"
        }
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D
            || byte == 0x5F
    }
}
