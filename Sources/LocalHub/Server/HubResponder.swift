import Foundation
import HTTPTypes
import Hummingbird
import LocalHubSupport
import Logging
import NIOCore
import NotificationHubs

/// The hub's HTTP front: routes the Notification Hubs REST API and the sandbox push service
/// to the engine, case-insensitively, with SAS authorization on every call.
struct HubResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    let engine: HubEngine
    let verifiers: [String: VerifiedTokens]
    let configuration: LocalHubConfiguration
    let scheme: String

    /// This start's secret, for `/healthz` to prove it is the hub of its data folder.
    let secret: String

    init(engine: HubEngine, keys: HubKeys, configuration: LocalHubConfiguration, secret: String) {
        self.engine = engine
        self.secret = secret
        self.configuration = configuration
        self.scheme = configuration.tls ? "https" : "http"
        var verifiers: [String: VerifiedTokens] = [:]
        for hub in configuration.hubs {
            verifiers[hub.lowercased()] = VerifiedTokens(
                verifier: SASVerifier(rules: keys.rules(hub: hub), clockSkew: configuration.clockSkew))
        }
        self.verifiers = verifiers
    }

    /// Accepted `api-version` values: 2013-04 through 2020-06.
    static func isSupported(apiVersion: String) -> Bool {
        let parts = apiVersion.split(separator: "-")
        guard parts.count == 2, let year = Int(parts[0]), let month = Int(parts[1]), (1...12).contains(month) else {
            return false
        }
        let value = year * 100 + month
        return value >= 201304 && value <= 202006
    }

    func respond(to request: Request, context: Context) async throws -> Response {
        let hubRequest = HubRequest(request)
        var route = "unknown"
        let response: Response
        do {
            response = try await dispatch(hubRequest, route: &route)
        } catch let refusal as HubRefusal {
            response = HubReply.error(refusal.status, refusal.detail, trackingId: hubRequest.trackingId, headers: refusal.headers)
        } catch let refusal as WriteRefusal {
            let answer = HubRefusal(refusal)
            response = HubReply.error(answer.status, answer.detail, trackingId: hubRequest.trackingId)
        } catch {
            engine.logger.error("\(request.method) \(request.uri.path) failed: \(error)")
            response = HubReply.error(
                .internalServerError, "The hub could not complete the request: \(error)", trackingId: hubRequest.trackingId)
        }
        engine.metrics.request(route: route, method: request.method.rawValue, status: Int(response.status.code))
        return response
    }

    private func dispatch(_ r: HubRequest, route: inout String) async throws -> Response {
        // The host is signed into token audiences and written into Location headers.
        guard r.authority.utf8.allSatisfy(HubRequest.isAuthorityByte) else {
            throw HubRefusal.badRequest("The Host header is not a host name or address with a port")
        }
        let s = r.lowered
        switch s.count {
        case 1 where s[0] == "healthz":
            route = "/healthz"
            var headers = HTTPFields()
            if let challenge = r.query[LocalHubProof.challengeParameter] {
                guard LocalHubProof.isValidChallenge(challenge) else {
                    throw HubRefusal.badRequest("The challenge must be 1 to \(LocalHubProof.maximumChallengeLength) characters")
                }
                headers[HTTPField.Name(LocalHubProof.header)!] = LocalHubProof.answer(challenge: challenge, secret: secret)
            }
            return HubReply.body(
                .ok, "ok\n", contentType: "text/plain; charset=utf-8", trackingId: r.trackingId, headers: headers)
        case 1 where s[0] == "metrics":
            route = "/metrics"
            let text = engine.metrics.render(
                installations: engine.installationCount, registrations: engine.registrationCount,
                streamClients: engine.openStreams)
            return HubReply.body(.ok, text, contentType: "text/plain; version=0.0.4; charset=utf-8", trackingId: r.trackingId)
        default:
            break
        }
        if s.first == "_sandbox" {
            return try await sandbox(r, route: &route)
        }
        guard let first = r.segments.first else {
            route = "/"
            return HubReply.body(
                .ok, "Local Notification Hubs emulator. Hubs: \(configuration.hubs.joined(separator: ", "))\n",
                contentType: "text/plain; charset=utf-8", trackingId: r.trackingId)
        }
        guard let hub = engine.hubName(first) else {
            route = "/{hub}"
            throw HubRefusal(.notFound, "The messaging entity '\(first)' could not be found")
        }
        if let version = r.apiVersion, !Self.isSupported(apiVersion: version) {
            throw HubRefusal.badRequest(
                "The api-version '\(version)' in the query string is not supported. Use a version from 2013-04 to 2020-06")
        }
        let rest = Array(s.dropFirst())
        let ids = Array(r.segments.dropFirst())
        switch (r.method, rest.count, rest.first) {
        case (_, 2, "installations"):
            route = "/{hub}/installations/{id}"
            return try await installation(r, hub: hub, id: ids[1])
        case (.post, 1, "registrationids"):
            route = "/{hub}/registrationids"
            try authorize(r, hub: hub, needs: .listen)
            let id = HubEngine.makeRegistrationId()
            var headers = HTTPFields()
            headers[.location] = "\(baseURL(r))/\(hub)/registrationids/\(id)?api-version=\(r.apiVersion ?? "2015-01")"
            return HubReply.empty(.created, trackingId: r.trackingId, headers: headers)
        case (_, 1, "registrations"):
            route = "/{hub}/registrations"
            return try await registrations(r, hub: hub)
        case (_, 2, "registrations"):
            route = "/{hub}/registrations/{id}"
            return try await registration(r, hub: hub, id: ids[1])
        case (.get, 3, "tags") where rest[2] == "registrations":
            route = "/{hub}/tags/{tag}/registrations"
            try authorize(r, hub: hub, needs: .manage)
            return try registrationFeed(r, hub: hub, tag: ids[1], deviceToken: nil)
        case (.post, 1, "messages"):
            route = "/{hub}/messages"
            return try await send(r, hub: hub)
        case (.post, 2, "messages") where rest[1] == "$batch":
            route = "/{hub}/messages/$batch"
            try authorize(r, hub: hub, needs: .send)
            throw HubRefusal.badRequest("Direct batch sends are not supported by the local hub; send to each handle with direct")
        case (.get, 2, "messages"):
            route = "/{hub}/messages/{id}"
            return try await notificationDetails(r, hub: hub, id: ids[1])
        case (_, _, "schedulednotifications"):
            route = "/{hub}/schedulednotifications"
            try authorize(r, hub: hub, needs: .send)
            throw HubRefusal.badRequest("Scheduled notifications are not supported by the local hub")
        default:
            route = "unknown"
            if ["installations", "registrations", "registrationids", "messages", "tags"].contains(rest.first ?? "") {
                throw HubRefusal(.methodNotAllowed, "The method \(r.method) is not allowed on \(r.rawPath)")
            }
            throw HubRefusal(.notFound, "No resource at \(r.rawPath)")
        }
    }

    /// The base URL clients used, for `Location` headers.
    func baseURL(_ r: HubRequest) -> String { "\(scheme)://\(r.authority)" }

    /// Verifies the token for this hub and checks its rights: 401 for a bad token, 403 for a
    /// good token without the right.
    @discardableResult
    func authorize(_ r: HubRequest, hub: String, needs rights: AccessRights, audiencePath: String? = nil) throws
        -> AuthorizationRule
    {
        guard let verifier = verifiers[hub.lowercased()] else { throw HubRefusal(.notFound, "Unknown hub \(hub)") }
        let rule: AuthorizationRule
        do {
            rule = try verifier.verify(header: r.header("Authorization"), host: r.authority, path: audiencePath ?? r.rawPath)
        } catch {
            throw HubRefusal(.unauthorized, error.description)
        }
        guard rule.rights.allow(rights) else {
            let claim = rights.contains(.manage) ? "Manage" : rights.contains(.send) ? "Send" : "Listen"
            throw HubRefusal(
                .forbidden, "\(claim) claim is required for this operation. The rule '\(rule.name)' grants \(rule.rights)")
        }
        return rule
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

    /// Reads the body, refusing more than the configured maximum with 413.
    func body(_ r: HubRequest) async throws -> [UInt8] {
        let limit = configuration.maximumBodyBytes
        if let length = r.header("Content-Length").flatMap(Int.init), length > limit {
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
