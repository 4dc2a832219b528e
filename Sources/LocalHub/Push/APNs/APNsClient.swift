import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import NotificationHubs
import Synchronization

/// Sends notifications to APNs (or a peer speaking its protocol) over HTTP/2 with token
/// authentication: one connection per endpoint, its streams multiplexed, at most
/// `maximumStreams` requests in flight. `apns-topic` comes from the credentials only;
/// `apns-push-type`, `apns-priority`, `apns-expiration`, `apns-collapse-id` and `apns-id`
/// from the sender's headers (the push type inferred from the payload when absent).
/// Retries: once with a new token after 403 ExpiredProviderToken; 429 and 5xx with the
/// shared jittered backoff, honouring `Retry-After` (up to a minute), at most `retries`
/// times. A broken connection is not retried (the push may have been shown).
public final class APNsClient: Sendable {
    public let credentials: ProviderCredentials.APNs
    private let http: HTTPClient
    private let streams: StreamLimit
    private let backoff: Backoff
    private let retries: Int

    /// The longest `Retry-After` honoured, in seconds.
    static let longestRetryAfter = 60.0

    /// The headers a sender may set; anything else it sent is not passed on.
    static let passedHeaders = ["apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id", "apns-id"]

    public init(
        _ credentials: ProviderCredentials.APNs, maximumStreams: Int = 500, backoff: Backoff = Backoff(base: 0.5, maximum: 30),
        retries: Int = 3
    ) throws {
        http = ProviderHTTP.client(trusting: credentials.caFile)
        self.credentials = credentials
        streams = StreamLimit(maximumStreams)
        self.backoff = backoff
        self.retries = retries
    }

    /// Closes the connection; the client cannot send after.
    public func shutdown() async {
        try? await http.shutdown()
    }

    /// Sends `payload` to the device `token` (hex) with the sender's `headers` (lower-cased
    /// names).
    public func send(device token: String, payload: [UInt8], headers: [String: String]) async -> ProviderAnswer {
        await streams.acquire()
        defer { streams.release() }
        var backoff = backoff
        var renewed = false
        var attempt = 0
        while true {
            let jwt = credentials.token.token()
            var request = HTTPClientRequest(url: "\(credentials.endpoint)/3/device/\(token)")
            request.method = .POST
            request.headers.add(name: "authorization", value: "bearer \(jwt)")
            request.headers.add(name: "apns-topic", value: credentials.topic)
            for name in Self.passedHeaders { if let value = headers[name] { request.headers.add(name: name, value: value) } }
            if headers["apns-push-type"] == nil {
                let type = Self.pushType(of: payload)
                request.headers.add(name: "apns-push-type", value: type)
                // APNs takes a background push only at priority 5.
                if type == "background", headers["apns-priority"] == nil {
                    request.headers.add(name: "apns-priority", value: "5")
                }
            }
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: payload))
            let status: Int
            let reason: String
            let retryAfter: Double?
            do {
                let response = try await http.execute(request, timeout: .seconds(30))
                status = Int(response.status.code)
                if status == 200 {
                    // Delivered, whatever becomes of the (empty) body.
                    _ = try? await response.body.collect(upTo: 64 << 10)
                    return .delivered(id: response.headers.first(name: "apns-id"))
                }
                let body = (try? await response.body.collect(upTo: 64 << 10)).map { Array($0.readableBytesView) } ?? []
                reason = Self.reason(in: body) ?? "HTTP \(status)"
                retryAfter = response.headers.first(name: "retry-after").flatMap(Double.init)
            } catch {
                // Not retried here: the request may have reached APNs before the connection
                // failed, and a retry could show the notification twice. (The HTTP client
                // already retries making a connection until the request's deadline.)
                return .unreachable(String(describing: error).prefix(200).description)
            }
            if status == 403, reason == "ExpiredProviderToken", !renewed, credentials.token.expired(jwt) {
                renewed = true
                continue
            }
            if status == 429 || status >= 500, attempt < retries {
                attempt += 1
                let wait = max(backoff.fail(), min(retryAfter ?? 0, Self.longestRetryAfter))
                try? await Task.sleep(nanoseconds: UInt64(wait * 1e9))
                continue
            }
            return .refused(status: status, reason: reason)
        }
    }

    /// `alert` when the payload shows something (an alert, a badge or a sound), otherwise
    /// `background` (APNs refuses a push type that does not match the payload).
    static func pushType(of payload: [UInt8]) -> String {
        guard let aps = (try? JSONValue(parsing: payload))?["aps"]?.objectMembers else { return "alert" }
        let shows = aps.contains { ["alert", "badge", "sound"].contains($0.0) }
        return shows || !aps.contains(where: { $0.0 == "content-available" }) ? "alert" : "background"
    }

    /// The `reason` of APNs' error body `{"reason": "…"}`.
    static func reason(in body: [UInt8]) -> String? {
        guard let text = (try? JSONValue(parsing: body))?["reason"]?.stringValue else { return nil }
        return String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F }.prefix(64).map(Character.init))
    }
}
