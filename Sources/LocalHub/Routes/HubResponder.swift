import Foundation
import HTTPTypes
import Hummingbird
import LocalHubSupport
import Logging
import NIOCore
import NotificationHubs

/// The hub's request handlers: the Notification Hubs REST API and the built-in push service,
/// on the engine, with SAS authorization on every call. `router()` is their route table.
struct HubResponder: Sendable {
    let engine: HubEngine
    /// The keys served now; changed while the hub runs (`KeyWatcher`).
    let keyRing: KeyRing
    let configuration: LocalHubConfiguration
    let scheme: String

    /// This start's secret, for `/healthz` to prove it is the hub of its data folder.
    let secret: String
    /// What each client has left of its hourly new devices and written bytes.
    let newDevices: ClientBuckets
    let writtenBytes: ClientBuckets

    init(engine: HubEngine, keyRing: KeyRing, configuration: LocalHubConfiguration, secret: String) {
        self.engine = engine
        self.secret = secret
        self.configuration = configuration
        self.scheme = configuration.tls ? "https" : "http"
        newDevices = ClientBuckets(perHour: configuration.clientRates.newDevicesPerHour)
        writtenBytes = ClientBuckets(perHour: configuration.clientRates.bytesPerHour)
        self.keyRing = keyRing
    }

    /// Accepted `api-version` values: 2013-04 through 2020-06.
    static func isSupported(apiVersion: String) -> Bool {
        guard let value = apiVersionNumber(apiVersion) else { return false }
        return value >= 201304 && value <= 202006
    }

    /// `YYYY-MM` as the number `YYYYMM`; nil for anything else.
    static func apiVersionNumber(_ apiVersion: String) -> Int? {
        let parts = apiVersion.split(separator: "-")
        guard parts.count == 2, let year = Int(parts[0]), let month = Int(parts[1]), (1...12).contains(month) else {
            return nil
        }
        return year * 100 + month
    }

    /// The base URL clients used, for `Location` headers.
    /// The address the client used, for `Location`, `Content-Location` and the feeds' links:
    /// this hub's scheme, or the one a trusted proxy says the client used
    /// (`X-Forwarded-Proto`, believed only with the proxy's `X-Forwarded-For`), and the host.
    func baseURL(_ r: HubRequest) -> String {
        let told = r.client.proxied ? r.header(Self.forwardedProto)?.lowercased() : nil
        return "\(told == "https" || told == "http" ? told! : scheme)://\(r.authority)"
    }

    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!

    /// Spends what a write costs its client: `bytes` of body, and one new device when
    /// `newDevice` (a claim, installation or registration that did not exist). 429 with
    /// `Retry-After` once the client used what it may in an hour (`ClientRates`).
    func spend(_ r: HubRequest, bytes: Int, newDevice: Bool) throws {
        let rates = configuration.clientRates
        if newDevice, let refusal = newDevices.take(1, client: r.client) {
            throw HubRefusal.tooManyRequests(
                "\(Self.spender(refusal, r.client)) has added \(Self.share(refusal, r.client, of: rates.newDevicesPerHour)) "
                    + "devices within the hour, the most it may (claims, installations and registrations that did not "
                    + "exist)", retryAfter: refusal.seconds)
        }
        if let refusal = writtenBytes.take(bytes, client: r.client) {
            throw HubRefusal.tooManyRequests(
                "\(Self.spender(refusal, r.client)) has written "
                    + "\(HubEngine.describeBytes(Self.share(refusal, r.client, of: rates.bytesPerHour))) of installations and "
                    + "registrations within the hour, the most it may", retryAfter: refusal.seconds)
        }
    }

    /// Who spent a budget: the client, a network around it, or the clients counted together.
    static func spender(_ refusal: ClientBuckets.Refusal, _ client: RequestClient) -> String {
        switch refusal.key {
        case client.key: "This client (\(client))"
        case ClientBuckets.overflowKey: "This client (\(client)), counted with every client the hub has no room to count apart,"
        default: "This client's network (\(refusal.key))"
        }
    }

    /// The budget of what was short: a client's, or its network's share of it.
    static func share(_ refusal: ClientBuckets.Refusal, _ client: RequestClient, of budget: Int) -> Int {
        if refusal.key == client.key { return budget }
        if let index = client.networks.firstIndex(of: refusal.key) {
            return budget * Int(ClientBuckets.networkShares[index])
        }
        return budget * Int(ClientBuckets.crowdShare)
    }

    /// Verifies the token for this hub and checks its rights: 401 for a bad token, 403 for a
    /// good token without the right, or 401 with the same words when the request names an
    /// api-version before 2020-06, as the service answered those (wire spec §3.5).
    @discardableResult
    func authorize(_ r: HubRequest, hub: String, needs rights: AccessRights, audiencePath: String? = nil) throws
        -> SASVerifier.SignedToken
    {
        guard let verifier = keyRing.verifier(hub: hub) else { throw HubRefusal(.notFound, "Unknown hub \(hub)") }
        let token: SASVerifier.SignedToken
        do {
            token = try verifier.verify(header: r.header(.authorization), host: r.authority, path: audiencePath ?? r.rawPath)
        } catch {
            throw HubRefusal(.unauthorized, error.description)
        }
        let rule = token.rule
        guard rule.rights.allow(rights) else {
            let claim = rights.contains(.manage) ? "Manage" : rights.contains(.send) ? "Send" : "Listen"
            throw HubRefusal(
                Self.answersMissingRightsWith401(apiVersion: r.apiVersion) ? .unauthorized : .forbidden,
                "\(claim) claim is required for this operation. The rule '\(rule.name)' grants \(rule.rights)",
                code: .rightsRefused)
        }
        return token
    }

    /// Whether `apiVersion` is one before 2020-06, whose clients were told of a missing right
    /// with 401; no api-version is taken as 2020-06.
    static func answersMissingRightsWith401(apiVersion: String?) -> Bool {
        guard let value = apiVersion.flatMap(apiVersionNumber) else { return false }
        return value < 202006
    }

    /// A paging parameter (`$top`, `continuationtoken`, `since`, `limit`): absent, or a
    /// whole number from 0 up; anything else is refused with 400.
    func pagingNumber(_ r: HubRequest, _ name: String) throws -> Int? {
        guard let text = r.query[name], !text.isEmpty else { return nil }
        guard text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let value = Int(text)
        else {
            throw HubRefusal.badRequest("The \(name) '\(text.prefix(40))' is not a whole number from 0 up")
        }
        return value
    }

    /// Reads the body, refusing more than the configured maximum (and `extra` bytes) with 413.
    func body(_ r: HubRequest, extra: Int = 0) async throws -> [UInt8] {
        let limit = configuration.maximumBodyBytes + extra
        if let length = r.header(.contentLength).flatMap(Int.init), length > limit {
            throw HubRefusal(.contentTooLarge, "The request body is \(length) bytes; at most \(limit) are accepted")
        }
        do {
            var buffer = try await r.request.body.collect(upTo: limit)
            return buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch is NIOTooManyBytesError {
            throw HubRefusal(.contentTooLarge, "The request body is larger than \(limit) bytes")
        } catch {
            // Malformed framing, a client gone halfway, or the body deadline: the client's doing.
            throw HubRefusal.badRequest("The request body could not be read: \(error)")
        }
    }
}
