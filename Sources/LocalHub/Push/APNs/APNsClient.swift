import Foundation
import NIOCore
import NIOSSL
import NotificationHubs
import Synchronization

/// Sends notifications to APNs (or a peer speaking its protocol) over HTTP/2 with token
/// authentication: one connection per endpoint (`HTTP2Connection`), its streams multiplexed,
/// at most `maximumStreams` requests in flight. `apns-topic` comes from the credentials only;
/// `apns-push-type`, `apns-priority`, `apns-expiration`, `apns-collapse-id` and `apns-id`
/// from the sender's headers (the push type inferred from the payload when absent).
/// Retries: once at once with a new token after 403 ExpiredProviderToken; 429 and 5xx as
/// `PushRetries` says, as is a request the server never took (no connection, or above a
/// GOAWAY's last stream). A connection that broke with the request in flight is not retried
/// (the push may have been shown). A request holds one of `maximumStreams` slots while it is
/// in flight, never while it waits to be tried again.
public final class APNsClient: Sendable {
    public let credentials: PushCredentials.APNs
    private let connection: HTTP2Connection
    private let streams: StreamLimit
    let maximumStreams: Int
    let backoff: Backoff
    let retries: Int
    /// How long one request may wait for its answer.
    private let requestTimeout: TimeAmount

    /// The headers a sender may set; anything else it sent is not passed on.
    static let passedHeaders = ["apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id", "apns-id"]

    public init(
        _ credentials: PushCredentials.APNs, maximumStreams: Int = 500, backoff: Backoff = Backoff(base: 0.5, maximum: 30),
        retries: Int = 3, requestTimeout: TimeAmount = .seconds(30)
    ) throws {
        self.requestTimeout = requestTimeout
        connection = try HTTP2Connection(origin: credentials.endpoint, trusting: credentials.caFile)
        self.credentials = credentials
        streams = StreamLimit(maximumStreams)
        self.maximumStreams = max(1, maximumStreams)
        self.backoff = backoff
        self.retries = retries
    }

    /// Closes the connection; the client cannot send after.
    public func shutdown() async {
        await connection.shutdown()
    }

    /// Sends `payload` to the device `token` (hex) with the sender's `headers` (lower-cased
    /// names), retrying as `PushRetries` says.
    public func send(device token: String, payload: [UInt8], headers: [String: String]) async -> PushAnswer {
        await PushRetries.run(backoff: backoff, limit: retries) {
            await attempt(device: token, payload: payload, headers: headers)
        }
    }

    /// One try of a message (and, when APNs says the provider token expired, one more at
    /// once with a new token).
    func attempt(device token: String, payload: [UInt8], headers: [String: String]) async -> PushAttempt {
        await streams.acquire()
        defer { streams.release() }
        var renewed = false
        while true {
            let jwt = credentials.token.token()
            var fields: [(String, String)] = [
                ("authorization", "bearer \(jwt)"), ("apns-topic", credentials.topic), ("content-type", "application/json"),
            ]
            for name in Self.passedHeaders { if let value = headers[name] { fields.append((name, value)) } }
            if headers["apns-push-type"] == nil {
                let type = Self.pushType(of: payload)
                fields.append(("apns-push-type", type))
                // APNs takes a background push only at priority 5.
                if type == "background", headers["apns-priority"] == nil { fields.append(("apns-priority", "5")) }
            }
            let answer: HTTP2Answer
            do {
                answer = try await connection.request(
                    method: "POST", path: "\(connection.basePath)/3/device/\(token)", headers: fields,
                    body: ByteBuffer(bytes: payload), timeout: requestTimeout)
            } catch .notSent(let why) {
                // APNs never took it: sent again, within the same bounds as a 5xx.
                return .again(.unreachable(String(why.prefix(200))), retryAfter: nil)
            } catch {
                // Not retried: the request may have reached APNs before the connection failed,
                // and a retry could show the notification twice.
                return .final(.unreachable(String(error.description.prefix(200))))
            }
            let status = answer.status
            // Delivered, whatever its (empty) body said.
            if status == 200 { return .final(.delivered(id: answer.headers.first(name: "apns-id"))) }
            let reason = Self.reason(in: Array(answer.body.readableBytesView)) ?? "HTTP \(status)"
            if status == 403, reason == "ExpiredProviderToken", !renewed, credentials.token.expired(jwt) {
                renewed = true
                continue
            }
            let refused = PushAnswer.refused(status: status, reason: reason)
            guard PushRetries.isTransient(status) else { return .final(refused) }
            return .again(refused, retryAfter: PushRetries.retryAfter(answer.headers.first(name: "retry-after")))
        }
    }

    /// `alert` when the payload shows something (an alert, a badge or a sound), otherwise
    /// `background` (APNs refuses a push type that does not match the payload).
    static func pushType(of payload: [UInt8]) -> String {
        guard let aps = (try? JSONValue(parsing: payload))?["aps"]?.objectMembers else { return "alert" }
        let shows = aps.contains { ["alert", "badge", "sound"].contains($0.0) }
        return shows || !aps.contains(where: { $0.0 == "content-available" }) ? "alert" : "background"
    }

    /// The `reason` of APNs' error body `{"reason": "…"}` when it is one APNs documents;
    /// nil otherwise (the answer's own text is never passed on).
    static func reason(in body: [UInt8]) -> String? {
        guard let text = (try? JSONValue(parsing: body))?["reason"]?.stringValue, knownReasons.contains(text) else {
            return nil
        }
        return text
    }

    /// The reasons APNs documents for its error answers.
    static let knownReasons: Set<String> = [
        "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
        "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken",
        "MissingTopic", "PayloadEmpty", "TopicDisallowed", "BadCertificate", "BadCertificateEnvironment",
        "ExpiredProviderToken", "Forbidden", "InvalidProviderToken", "MissingProviderToken", "UnrelatedKeyIdInToken",
        "BadEnvironmentKeyIdInToken", "BadPath", "MethodNotAllowed", "ExpiredToken", "Unregistered",
        "PayloadTooLarge", "TooManyProviderTokenUpdates", "TooManyRequests", "InternalServerError",
        "ServiceUnavailable", "Shutdown",
    ]
}
