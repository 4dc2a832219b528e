import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A notification to send: a template send's properties, or a native APNs payload.
public enum HubNotification: Sendable, Hashable {
    /// Template properties; every template registration matching the tags renders them.
    case template([String: String])
    /// A native APNs JSON payload with optional `apns-*` headers.
    case apple(payload: String, headers: [String: String] = [:])

    var format: NotificationFormat {
        switch self {
        case .template: return .template
        case .apple: return .apple
        }
    }

    var body: String {
        switch self {
        case .template(let properties):
            return JSONValue.object(properties.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).text
        case .apple(let payload, _):
            return payload
        }
    }
}

/// What an accepted send returns: the notification id from `Location`, and the outcome of a
/// test send.
public struct SendReceipt: Sendable, Hashable {
    public var notificationId: String?
    public var location: String?
    public var outcome: NotificationOutcome?
    public var trackingId: String?
}

/// A client of the Notification Hubs REST API: installations, registrations and sends, signed
/// with one SAS token that is renewed before it expires. Works against Azure and the local hub.
public struct HubClient: Sendable {
    public let connectionString: ConnectionString
    public let hubName: String
    public let apiVersion: String
    public var retryPolicy: RetryPolicy
    /// How long one attempt may take.
    public var timeout: TimeAmount
    let http: HTTPClient
    let tokens: TokenCache
    /// Calls in flight to this namespace through `http`, shared by every client of both.
    let gate: StreamLimit

    /// A client of the hub named by the connection string's `EntityPath`, or `hubName`.
    /// - Parameters:
    ///   - tokenLifetime: seconds each SAS token is valid; it is renewed at 80 % of that.
    public init(
        connectionString: ConnectionString,
        hubName: String? = nil,
        httpClient: HTTPClient = HubClient.sharedHTTPClient,
        retryPolicy: RetryPolicy = RetryPolicy(),
        tokenLifetime: TimeInterval = 3600,
        apiVersion: String = "2020-06",
        timeout: TimeAmount = .seconds(30)
    ) throws(ConnectionStringError) {
        guard let hub = hubName ?? connectionString.entityPath, !hub.isEmpty else {
            throw ConnectionStringError(.missing("EntityPath (or a hub name)"))
        }
        self.init(
            connectionString: connectionString, hub: hub, httpClient: httpClient, retryPolicy: retryPolicy,
            tokenLifetime: tokenLifetime,
            apiVersion: apiVersion, timeout: timeout)
    }

    /// A client of `hub`.
    public init(
        connectionString: ConnectionString,
        hub: String,
        httpClient: HTTPClient = HubClient.sharedHTTPClient,
        retryPolicy: RetryPolicy = RetryPolicy(),
        tokenLifetime: TimeInterval = 3600,
        apiVersion: String = "2020-06",
        timeout: TimeAmount = .seconds(30)
    ) {
        self.connectionString = connectionString
        self.hubName = hub
        self.http = httpClient
        self.retryPolicy = retryPolicy
        self.apiVersion = apiVersion
        self.timeout = timeout
        self.gate = Self.gate(http: httpClient, root: connectionString.serviceRoot)
        self.tokens = TokenCache.shared(
            resource: connectionString.hubURL(hub), keyName: connectionString.keyName, key: connectionString.key,
            lifetime: tokenLifetime)
    }

    /// The hub's base URL, e.g. `https://ns.servicebus.windows.net/hub`.
    public var hubURL: String { connectionString.hubURL(hubName) }

    /// A current `Authorization` header value (cached; renewed before it expires).
    public func authorizationHeader() async -> String {
        await tokens.token(now: Date()).token
    }

    // MARK: Installations

    /// `PUT /{hub}/installations/{id}`: creates or overwrites an installation (200).
    /// `claimSecret`: the secret of the claim of the installation's push channel, which the local
    /// hub asks for when the channel is a terminal's claimed token (`BuiltInPushClaim`).
    public func createOrUpdateInstallation(_ installation: Installation, claimSecret: String? = nil) async throws(HubError) {
        _ = try await call(
            .PUT, "installations/\(Self.segment(installation.installationId))", headers: Self.claimHeaders(claimSecret),
            body: installation.json.text, contentType: "application/json", expect: [200, 201])
    }

    /// `PATCH /{hub}/installations/{id}` with JSON-Patch operations (200).
    public func patchInstallation(id: String, _ operations: [InstallationPatchOperation]) async throws(HubError) {
        _ = try await call(
            .PATCH, "installations/\(Self.segment(id))", body: JSONValue.array(operations.map(\.json)).text,
            contentType: "application/json-patch+json", expect: [200])
    }

    /// `GET /{hub}/installations/{id}`; a missing installation throws a 404 `HubError`.
    public func installation(id: String) async throws(HubError) -> Installation {
        let response = try await call(.GET, "installations/\(Self.segment(id))", expect: [200])
        do {
            return try Installation(jsonText: response.body.utf8)
        } catch {
            throw HubError(
                .invalidResponse, detail: "the installation JSON is unreadable: \(error)", trackingId: response.trackingId)
        }
    }

    /// `DELETE /{hub}/installations/{id}` (204, also when it did not exist).
    public func deleteInstallation(id: String) async throws(HubError) {
        _ = try await call(.DELETE, "installations/\(Self.segment(id))", expect: [200, 204])
    }

    // MARK: Registrations

    /// `POST /{hub}/registrationids`: a new registration id, read from `Location`.
    public func createRegistrationId() async throws(HubError) -> String {
        let response = try await call(.POST, "registrationids", expect: [200, 201])
        guard let location = response.location, let id = Self.lastPathSegment(location) else {
            throw HubError(.invalidResponse, detail: "the hub returned no Location for the new registration id")
        }
        return id
    }

    /// `PUT /{hub}/registrations/{id}`: creates or updates an Apple registration.
    public func createOrUpdateRegistration(_ registration: Registration) async throws(HubError) -> Registration {
        var registration = registration
        if registration.registrationId == nil { registration.registrationId = try await createRegistrationId() }
        let response = try await call(
            .PUT, "registrations/\(Self.segment(registration.registrationId!))", body: registration.requestEntryXML,
            contentType: "application/atom+xml;type=entry;charset=utf-8", expect: [200, 201])
        return try Self.parseRegistration(response)
    }

    /// `GET /{hub}/registrations/{id}`.
    public func registration(id: String) async throws(HubError) -> Registration {
        try Self.parseRegistration(try await call(.GET, "registrations/\(Self.segment(id))", expect: [200]))
    }

    /// `DELETE /{hub}/registrations/{id}` with `If-Match` (`*` by default).
    public func deleteRegistration(id: String, etag: String = "*") async throws(HubError) {
        _ = try await call(
            .DELETE, "registrations/\(Self.segment(id))", headers: ["If-Match": etag == "*" ? "*" : "\"\(etag)\""],
            expect: [200, 204])
    }

    /// `GET /{hub}/registrations` or `/{hub}/tags/{tag}/registrations` (Manage right).
    public func registrations(tag: String? = nil, top: Int? = nil) async throws(HubError) -> [Registration] {
        let path = tag.map { "tags/\(Self.segment($0))/registrations" } ?? "registrations"
        let query = top.map { ["$top=\($0)"] } ?? []
        let response = try await call(.GET, path, query: query, expect: [200])
        do {
            return try Registration.parseFeed(response.body)
        } catch {
            throw HubError(
                .invalidResponse, detail: "the registration feed is unreadable: \(error)", trackingId: response.trackingId)
        }
    }

    // MARK: Sends

    /// Sends to a tag expression, or to everyone when `tagExpression` is nil.
    public func send(_ notification: HubNotification, tagExpression: String? = nil) async throws(HubError) -> SendReceipt {
        try await send(notification, tagExpression: tagExpression, query: [])
    }

    /// A test send: the hub answers with the outcome for each device reached.
    public func testSend(_ notification: HubNotification, tagExpression: String? = nil) async throws(HubError) -> SendReceipt {
        try await send(notification, tagExpression: tagExpression, query: ["test"])
    }

    /// Sends straight to one device handle, bypassing registrations.
    public func sendDirect(_ notification: HubNotification, deviceHandle: String) async throws(HubError) -> SendReceipt {
        try await send(
            notification, tagExpression: nil, query: ["direct"],
            extraHeaders: ["ServiceBusNotification-DeviceHandle": deviceHandle])
    }

    /// `GET /{hub}/messages/{id}` (Manage): the notification's state and outcome counts.
    public func notificationDetails(id: String) async throws(HubError) -> NotificationDetails {
        let response = try await call(.GET, "messages/\(Self.segment(id))", expect: [200])
        do {
            return try NotificationDetails(xml: response.body)
        } catch {
            throw HubError(
                .invalidResponse, detail: "the notification details are unreadable: \(error)", trackingId: response.trackingId)
        }
    }

    func send(
        _ notification: HubNotification, tagExpression: String?, query: [String], extraHeaders: [String: String] = [:],
        resource: String = "messages"
    ) async throws(HubError) -> SendReceipt {
        var headers = extraHeaders
        headers["ServiceBusNotification-Format"] = notification.format.rawValue
        if let tagExpression { headers["ServiceBusNotification-Tags"] = tagExpression }
        if case .apple(_, let apnsHeaders) = notification {
            for (name, value) in apnsHeaders { headers[name] = value }
        }
        let response = try await call(
            .POST, resource, query: query, headers: headers, body: notification.body,
            contentType: "application/json;charset=utf-8", expect: [200, 201])
        var receipt = SendReceipt(location: response.location, trackingId: response.trackingId)
        receipt.notificationId = response.location.flatMap(Self.lastPathSegment)
        if query.contains("test"), !response.body.isEmpty {
            do {
                receipt.outcome = try NotificationOutcome(xml: response.body)
            } catch {
                throw HubError(
                    .invalidResponse, detail: "the test-send outcome is unreadable: \(error)", trackingId: response.trackingId)
            }
        }
        return receipt
    }

    // MARK: Transport

    struct Response {
        var status: Int
        var body: String
        var location: String?
        var trackingId: String?
    }

    func call(
        _ method: HTTPMethod, _ path: String, query: [String] = [], headers: [String: String] = [:], body: String? = nil,
        contentType: String? = nil, expect: Set<Int>
    ) async throws(HubError) -> Response {
        var attempt = 0
        while true {
            do {
                return try await attemptCall(
                    method, path, query: query, headers: headers, body: body, contentType: contentType, expect: expect)
            } catch {
                guard let delay = retryPolicy.delay(afterAttempt: attempt, error: error) else { throw error }
                attempt += 1
                try? await Task.sleep(for: .seconds(delay))
                if Task.isCancelled { throw error }
            }
        }
    }

    private func attemptCall(
        _ method: HTTPMethod, _ path: String, query: [String], headers: [String: String], body: String?, contentType: String?,
        expect: Set<Int>
    ) async throws(HubError) -> Response {
        // A path from the namespace's root (the local hub's built-in push service), or one under the hub.
        let base = path.hasPrefix("/") ? String(connectionString.serviceRoot.dropLast()) + path : "\(hubURL)/\(path)"
        let url = "\(base)?" + (query + ["api-version=\(apiVersion)"]).joined(separator: "&")
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: await authorizationHeader())
        request.headers.add(name: "x-ms-version", value: apiVersion)
        request.headers.add(name: "User-Agent", value: "breaking-news/1.0 (NotificationHubs Swift)")
        if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.body = .bytes(ByteBuffer(string: body))
        } else if method == .POST || method == .PUT {
            request.headers.add(name: "Content-Length", value: "0")
        }
        let response: HTTPClientResponse
        let text: String
        await gate.acquire()
        defer { gate.release() }
        do {
            response = try await http.execute(request, timeout: timeout)
            text = String(buffer: try await response.body.collect(upTo: 16 << 20))
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            throw HubError(.timedOut, detail: "\(method) \(url) took longer than \(timeout.nanoseconds / 1_000_000_000) s")
        } catch {
            throw HubError(.unreachable, detail: "\(method) \(url): \(Self.describe(error))")
        }
        let status = Int(response.status.code)
        let trackingId = response.headers.first(name: "TrackingId")
        guard expect.contains(status) else {
            throw HubError.answered(
                status, body: text, fallback: text.isEmpty ? response.status.reasonPhrase : String(text.prefix(500))
            ) { response.headers.first(name: $0) }
        }
        return Response(status: status, body: text, location: response.headers.first(name: "Location"), trackingId: trackingId)
    }

    /// A short text for a transport error, chosen by its type (and errno), not its wording.
    public static func describe(_ error: Error) -> String {
        switch error {
        case let error as IOError: return describe(errno: error.errnoCode)
        case let error as NIOConnectionError:
            if let first = error.connectionErrors.first { return describe(first.error) }
            if let dns = error.dnsAAAAError ?? error.dnsAError { return "the name could not be resolved (\(dns))" }
            return "no connection could be made"
        case ChannelError.connectTimeout: return "connection timed out"
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout: return "connection timed out"
            case .remoteConnectionClosed: return "the hub closed the connection"
            case .readTimeout, .deadlineExceeded: return "timed out"
            case .cancelled: return "cancelled"
            default: return "\(error)"
            }
        default:
            return String(describing: error)
        }
    }

    /// `connection refused`, `connection reset`…: the errno as people say it.
    static func describe(errno code: Int32) -> String {
        switch code {
        case ECONNREFUSED: return "connection refused"
        case ECONNRESET: return "connection reset"
        case ETIMEDOUT: return "connection timed out"
        case EHOSTUNREACH, ENETUNREACH: return "no route to the hub"
        default:
            var buffer = [CChar](repeating: 0, count: 256)
            guard strerror_r(code, &buffer, buffer.count) == 0 else { return "error \(code)" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).lowercased()
        }
    }

    static func parseRegistration(_ response: Response) throws(HubError) -> Registration {
        do {
            return try Registration(atom: response.body)
        } catch {
            throw HubError(
                .invalidResponse, detail: "the registration entry is unreadable: \(error)", trackingId: response.trackingId)
        }
    }

    /// Percent-encodes one path segment.
    static func segment(_ text: String) -> String { PercentEncoding.encode(text, uppercaseHex: true) }

    /// The last path segment of a URL, without its query: the id in a `Location`.
    public static func lastPathSegment(_ url: String) -> String? {
        let withoutQuery = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
        let segment = withoutQuery.split(separator: "/").last.map(String.init)
        return segment.flatMap { PercentEncoding.decode($0) ?? $0 }
    }
}
