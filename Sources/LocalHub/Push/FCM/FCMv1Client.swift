import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import NotificationHubs

/// Sends notifications to FCM v1 (or a peer speaking its protocol):
/// `POST {endpoint}/v1/projects/{projectId}/messages:send` with the service account's OAuth
/// access token (`FCMAccessToken`), over HTTP/2 or HTTP/1.1, whichever TLS negotiates, at
/// most `maximumConcurrent` requests in flight. The payload is Notification Hubs' `fcmv1`
/// format, `{"message":{…}}` without a target: the device's token is set as `message.token`,
/// in place of any `token`, `topic` or `condition` the sender wrote. Retries: once at once
/// with a new access token after a 401; 429 and 5xx as `PushRetries` says. A broken
/// connection is not retried (the message may have been sent). A request holds one of
/// `maximumConcurrent` slots while in flight, never while it waits to be tried again.
public final class FCMv1Client: Sendable {
    public let credentials: PushCredentials.FCMv1
    private let accessToken: FCMAccessToken
    private let http: HTTPClient
    private let limit: StreamLimit
    let maximumConcurrent: Int
    let backoff: Backoff
    let retries: Int
    private let sendURL: String

    /// The largest payload sent, in bytes. FCM takes 4096 bytes of message data; this counts
    /// the whole payload as the sender gave it (`{"message":{…}}`, platform overrides and
    /// all), more than FCM counts, so that no payload passed here is too large there.
    public static let maximumPayloadBytes = 4096

    /// The error type of FCM's `details` that carries its `errorCode`.
    static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"

    /// Reads the service account's key (throws `FCMCredentialError` when it is not PKCS #8
    /// RSA); makes no connection yet.
    public init(
        _ credentials: PushCredentials.FCMv1, maximumConcurrent: Int = 100,
        backoff: Backoff = Backoff(base: 0.5, maximum: 30), retries: Int = 3
    ) throws {
        // The key first: a client made before a throw would have to be shut down.
        accessToken = try FCMAccessToken(credentials)
        http = PushHTTP.client(trusting: credentials.caFile)
        self.credentials = credentials
        limit = StreamLimit(maximumConcurrent)
        self.maximumConcurrent = max(1, maximumConcurrent)
        self.backoff = backoff
        self.retries = max(0, retries)
        sendURL = "\(credentials.endpoint)/v1/projects/\(FCMAccessToken.formEncoded(credentials.projectId))/messages:send"
    }

    /// Closes the connections; the client cannot send after.
    public func shutdown() async {
        try? await http.shutdown()
    }

    /// Sends `payload` (`{"message":{…}}`) to the device registration `token`. `headers` are
    /// not used: everything FCM v1 takes is in the message. A payload `check` refuses is
    /// answered 400 INVALID_ARGUMENT without a request. When the token endpoint refuses the
    /// service account (`invalid_grant`…) the answer is a 401 with OAuth's error as reason,
    /// as FCM answers a request it cannot authenticate.
    public func send(device token: String, payload: [UInt8], headers: [String: String]) async -> PushAnswer {
        await PushRetries.run(backoff: backoff, limit: retries) {
            await attempt(device: token, payload: payload, headers: headers)
        }
    }

    /// One try of a message (and, when FCM says the access token expired, one more at once
    /// with a new token).
    func attempt(device token: String, payload: [UInt8], headers: [String: String]) async -> PushAttempt {
        guard Self.check(payload) == nil, let body = Self.request(payload, device: token) else {
            return .final(.refused(status: 400, reason: "INVALID_ARGUMENT"))
        }
        await limit.acquire()
        defer { limit.release() }
        var renewed = false
        while true {
            let bearer: String
            do {
                bearer = try await accessToken.token(using: http)
            } catch {
                switch error {
                case .unreachable(let why): return .final(.unreachable("the token endpoint: \(why)"))
                case .unreadable(let why): return .final(.unreachable(why))
                case .refused(let status, let reason, let retryAfter):
                    guard PushRetries.isTransient(status) else { return .final(.refused(status: 401, reason: reason)) }
                    return .again(.unreachable("the token endpoint answered HTTP \(status)"), retryAfter: retryAfter)
                }
            }
            var request = HTTPClientRequest(url: sendURL)
            request.method = .POST
            request.headers.add(name: "authorization", value: "Bearer \(bearer)")
            request.headers.add(name: "content-type", value: "application/json; charset=UTF-8")
            request.body = .bytes(ByteBuffer(bytes: body))
            let status: Int
            let reason: String
            let retryAfter: Duration?
            do {
                let response = try await http.execute(request, timeout: .seconds(30))
                status = Int(response.status.code)
                let answer = (try? await response.body.collect(upTo: 64 << 10)).map { Array($0.readableBytesView) } ?? []
                if status == 200 {
                    // Sent, whatever becomes of the name.
                    let name = (try? JSONValue(parsing: answer))?["name"]?.stringValue
                    return .final(.delivered(id: name.map { String($0.unicodeScalars.filter(Self.isPrintable).prefix(256)) }))
                }
                reason = Self.reason(in: answer) ?? "HTTP \(status)"
                retryAfter = PushRetries.retryAfter(response.headers.first(name: "retry-after"))
            } catch {
                // Not retried: the request may have reached FCM before the connection failed,
                // and a retry could show the notification twice.
                return .final(.unreachable(String(describing: error).prefix(200).description))
            }
            if status == 401, !renewed, accessToken.expired(bearer) {
                renewed = true
                continue
            }
            let refused = PushAnswer.refused(status: status, reason: reason)
            guard PushRetries.isTransient(status) else { return .final(refused) }
            return .again(refused, retryAfter: retryAfter)
        }
    }

    /// Why `payload` can never be sent, or nil: it must be a JSON object whose `message` is
    /// an object (the `fcmv1` format), of at most `maximumPayloadBytes` bytes.
    public static func check(_ payload: [UInt8]) -> String? {
        guard payload.count <= maximumPayloadBytes else {
            return "The payload is \(payload.count) bytes; FCM takes at most \(maximumPayloadBytes)"
        }
        guard let root = try? JSONValue(parsing: payload), root.objectMembers != nil, root["message"]?.objectMembers != nil
        else { return #"The payload is not a JSON object with a "message" object (the fcmv1 format)"# }
        return nil
    }

    /// The request body: `{"message":{…,"token":device}}`, the sender's message kept but for
    /// its target; other members of the payload (`validate_only`) are dropped.
    static func request(_ payload: [UInt8], device: String) -> [UInt8]? {
        guard let message = (try? JSONValue(parsing: payload))?["message"]?.objectMembers else { return nil }
        let targets: Set<String> = ["token", "topic", "condition"]
        let members = message.filter { !targets.contains($0.0) } + [("token", .string(device))]
        return JSONValue.object([("message", .object(members))]).bytes
    }

    /// FCM's reason in an error body `{"error":{"status","details":[{"@type","errorCode"}]}}`:
    /// the FcmError's `errorCode`, else the `status`, when it is one FCM or Google's API
    /// errors document; nil otherwise (the answer's own text is never passed on).
    static func reason(in body: [UInt8]) -> String? {
        guard let error = (try? JSONValue(parsing: body))?["error"] else { return nil }
        let fcmError = error["details"]?.arrayValue?.first { $0["@type"]?.stringValue == fcmErrorType }
        for text in [fcmError?["errorCode"]?.stringValue, error["status"]?.stringValue] {
            if let text, knownReasons.contains(text) { return text }
        }
        return nil
    }

    /// FCM's error codes, and the canonical statuses of Google's APIs.
    static let knownReasons: Set<String> = [
        "UNSPECIFIED_ERROR", "INVALID_ARGUMENT", "UNREGISTERED", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED", "UNAVAILABLE",
        "INTERNAL", "THIRD_PARTY_AUTH_ERROR", "CANCELLED", "UNKNOWN", "DEADLINE_EXCEEDED", "NOT_FOUND",
        "ALREADY_EXISTS", "PERMISSION_DENIED", "UNAUTHENTICATED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
        "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "DATA_LOSS",
    ]

    private static func isPrintable(_ scalar: Unicode.Scalar) -> Bool { scalar.value >= 0x20 && scalar.value < 0x7F }

}
