import Foundation
import HTTPTypes
import Hummingbird
import LocalHubSupport
import NIOCore
import NotificationHubs
import Synchronization

/// What the hub's middleware settles for a request before its handler runs.
struct HubRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The client's tracking id when it may be echoed, else a new one.
    var trackingId = ""
    /// The hub named by the path, in its configured spelling.
    var hub = ""
    /// Who the request comes from, for the per-client limits.
    var client = RequestClient.unknown
    /// The key that signed the request's token, once `Requires` has checked it.
    var credential: StreamCredential?
    /// What that key's rule grants (none before `Requires`).
    var rights: AccessRights = []
    /// The connection, for the device streams that write to it directly.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

extension HubResponder {
    /// The hub's one route table, matched ignoring case, every route on the router: one
    /// function per resource and method, parameters from the context, the rights a route
    /// needs as its own middleware (`Requires`). `HubFront` gives every request its tracking
    /// id, answers every refusal with the service's XML error and counts it in `/metrics`;
    /// `HubScope` resolves `{hub}` and checks `api-version`.
    func router() -> Router<HubRequestContext> {
        // HEAD answers as GET does (a health probe may use either).
        let router = Router(context: HubRequestContext.self, options: [.caseInsensitive, .autoGenerateHeadEndpoints])
        router.add(middleware: HubFront(responder: self))
        router.get("/") { request, context in self.home(HubRequest(request, context)) }
        router.get("healthz") { request, context in try await self.health(HubRequest(request, context)) }
        router.get("metrics") { request, context in try self.metricsPage(HubRequest(request, context)) }
        router.group("_inspect/:hub").add(middleware: HubScope(responder: self))
            .add(middleware: Requires(.manage, of: self, audience: .hub))
            .get("messages/:id") { request, context in
                try await self.explain(HubRequest(request, context), hub: context.hub, id: try context.parameter("id"))
            }
        addBuiltInPushRoutes(
            to: router.group("_sandbox/apns/:hub/devices").add(middleware: HubScope(responder: self, checksVersion: false)))
        let hub = router.group(":hub").add(middleware: HubScope(responder: self))
        addInstallationRoutes(to: hub)
        addRegistrationRoutes(to: hub)
        addMessageRoutes(to: hub)
        return router
    }

    /// A route that takes no such method: 405, once the caller showed the rights the resource
    /// needs (so that nothing is said of it to someone without them), with `hint` after.
    func notAllowed(_ hint: String) -> @Sendable (Request, HubRequestContext) async throws -> Response {
        { request, context in throw Self.methodNotAllowed(HubRequest(request, context), hint: hint) }
    }

    /// The one 405 of the hub, from a route that refuses the method or from a resource no
    /// route takes it for: the method and the path, and what to use instead when known.
    static func methodNotAllowed(_ r: HubRequest, hint: String? = nil) -> HubRefusal {
        HubRefusal(.methodNotAllowed, "The method \(r.method) is not allowed on \(r.rawPath)" + (hint.map { ". \($0)" } ?? ""))
    }

    /// `GET /`: what this server is.
    func home(_ r: HubRequest) -> Response {
        HubReply.body(
            .ok, "Local Notification Hubs emulator. Hubs: \(configuration.hubs.joined(separator: ", "))\n",
            contentType: "text/plain; charset=utf-8", trackingId: r.trackingId)
    }

    /// `GET /healthz`, answering a client's challenge with this start's proof.
    func health(_ r: HubRequest) async throws -> Response {
        var headers = HTTPFields()
        if let challenge = r.query[LocalHubProof.challengeParameter] {
            guard LocalHubProof.isValidChallenge(challenge) else {
                throw HubRefusal.badRequest("The challenge must be 1 to \(LocalHubProof.maximumChallengeLength) characters")
            }
            headers[HTTPField.Name(LocalHubProof.header)!] = LocalHubProof.answer(challenge: challenge, secret: secret)
        }
        // A node whose database does not answer is not fit to serve: a front takes it out.
        let store = await engine.storeHealth()
        if !store.healthy { headers[.retryAfter] = "2" }
        return HubReply.body(
            store.healthy ? .ok : .serviceUnavailable, (store.healthy ? "ok\n" : "unavailable\n") + store.line + "\n",
            contentType: "text/plain; charset=utf-8", trackingId: r.trackingId, headers: headers)
    }

    /// `GET /metrics`, Prometheus text: open to this machine when nothing stood between;
    /// otherwise only with `Authorization: Bearer` and the `--metrics-token` (Prometheus
    /// cannot make SAS tokens).
    func metricsPage(_ r: HubRequest) throws -> Response {
        if !r.client.directLoopback {
            guard let token = configuration.metricsToken else {
                throw HubRefusal(
                    .forbidden,
                    "Metrics are served to this machine only; start the hub with --metrics-token-file to serve them to "
                        + "other peers with a bearer token")
            }
            let given = r.header(.authorization).flatMap { value -> String? in
                value.lowercased().hasPrefix("bearer ") ? String(value.dropFirst(7)).trimmingCharacters(in: .whitespaces) : nil
            }
            guard let given, ConstantTime.equal(given, token) else {
                var refusal = HubRefusal(.unauthorized, "Metrics need Authorization: Bearer with the hub's metrics token")
                refusal.headers[.wwwAuthenticate] = "Bearer"
                throw refusal
            }
        }
        let text = engine.metrics.render(
            installations: engine.installationCount, registrations: engine.registrationCount,
            streamClients: engine.openStreams)
        return HubReply.body(.ok, text, contentType: "text/plain; version=0.0.4; charset=utf-8", trackingId: r.trackingId)
    }

}

/// In front of every route: the tracking id, the Host check, the service's XML error for
/// every refusal (and for paths no route takes), and the request counted under its route.
struct HubFront: RouterMiddleware {
    typealias Context = HubRequestContext
    let responder: HubResponder

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        context.trackingId =
            request.headers[HubRequest.trackingIdField].flatMap(HubRequest.acceptedTrackingId) ?? HubRequest.newTrackingId()
        context.client = RequestClient.of(
            peer: context.channel.remoteAddress, forwardedFor: request.headers[values: Self.forwardedFor],
            forwarded: request.headers[Self.forwarded] != nil || request.headers[Self.realIP] != nil,
            trusted: responder.configuration.trustedProxies)
        let response: Response
        do {
            // The host is signed into token audiences and written into Location headers.
            let authority = request.head.authority ?? "localhost"
            guard authority.utf8.allSatisfy(HubRequest.isAuthorityByte) else {
                throw HubRefusal.badRequest("The Host header is not a host name or address with a port")
            }
            response = try await next(request, context)
        } catch {
            response = answer(error, request: request, context: context)
        }
        let route = context.coreContext.endpointPath.value.map(Self.cachedRouteName) ?? "unknown"
        responder.engine.metrics.request(route: route, method: request.method.rawValue, status: Int(response.status.code))
        // The route as the table names it, not the path, which may hold a device token.
        context.logger.debug(
            "\(request.method) \(route) \(response.status.code)", metadata: ["trackingId": "\(context.trackingId)"])
        return response
    }

    /// Every error as the refusal the client gets: the hub's own, the engine's, a path no
    /// route takes, and anything else as a 500 that is logged.
    private func answer(_ error: Error, request: Request, context: Context) -> Response {
        let refusal: HubRefusal
        switch error {
        case let hubRefusal as HubRefusal: refusal = hubRefusal
        case let writeRefusal as WriteRefusal: refusal = HubRefusal(writeRefusal)
        case let error as HTTPError where error.status == .notFound: refusal = unrouted(request)
        case let unavailable as StoreUnavailable:
            responder.engine.logger.warning("\(request.method) \(request.uri.path): \(unavailable)")
            var busy = HubRefusal(.serviceUnavailable, "The hub's database is not reachable now; try again shortly")
            busy.headers[.retryAfter] = "2"
            refusal = busy
        default:
            responder.engine.logger.error("\(request.method) \(request.uri.path) failed: \(error)")
            refusal = HubRefusal(.internalServerError, "The hub could not complete the request: \(error)")
        }
        return refusal.response(from: request, context: context)
    }

    /// A path no route takes: an unknown hub, a method a resource does not take, or nothing.
    private func unrouted(_ request: Request) -> HubRefusal {
        let r = HubRequest(request, trackingId: "")
        guard let first = r.segments.first else { return HubRefusal(.notFound, "No resource at \(r.rawPath)") }
        if first.lowercased() == "_sandbox" {
            return HubRefusal(
                .notFound,
                "The built-in push service serves /_sandbox/apns/{hub}/devices/{token}/stream, /inbox and /deliveries; nothing at \(r.rawPath)"
            )
        }
        guard responder.engine.hubName(first) != nil else {
            return HubRefusal(.notFound, "The messaging entity '\(first)' could not be found", code: .hubNotFound)
        }
        if ["installations", "registrations", "registrationids", "messages", "tags"].contains(r.lowered.dropFirst().first ?? "") {
            return HubResponder.methodNotAllowed(r)
        }
        return HubRefusal(.notFound, "No resource at \(r.rawPath)")
    }

    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let forwarded = HTTPField.Name("Forwarded")!
    static let realIP = HTTPField.Name("X-Real-IP")!

    /// `routeName`, worked out once per route: the table has a few dozen.
    static func cachedRouteName(_ path: String) -> String {
        if let known = routeNames.withLock({ $0[path] }) { return known }
        let name = routeName(path)
        routeNames.withLock { if $0.count < 256 { $0[path] = name } }
        return name
    }

    private static let routeNames = Mutex<[String: String]>([:])

    /// The route as `/metrics` names it: the router's own description of the matched path
    /// (`/{hub}/installations/{id}`), or `unknown`.
    static func routeName(_ path: String) -> String {
        guard path != "NotFound", path != "unknown" else { return "unknown" }
        guard path.contains(":") else { return path }
        return "/"
            + path.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
    }
}

/// In front of the routes under `/{hub}`: the hub must be one this server serves, and an
/// `api-version`, when given, one the service knows.
struct HubScope: RouterMiddleware {
    typealias Context = HubRequestContext
    let responder: HubResponder
    /// Whether an `api-version` is checked (the built-in push service's paths take none).
    var checksVersion = true

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let raw = context.parameters.get("hub") ?? ""
        let name = PercentEncoding.decode(raw) ?? raw
        guard let hub = responder.engine.hubName(name) else {
            throw HubRefusal(.notFound, "The messaging entity '\(name)' could not be found", code: .hubNotFound)
        }
        if checksVersion, let version = HubRequest.queryValue(request.uri.query, named: "api-version"),
            !HubResponder.isSupported(apiVersion: version)
        {
            throw HubRefusal.badRequest(
                "The api-version '\(version)' in the query string is not supported. Use a version from 2013-04 to 2020-06")
        }
        var context = context
        context.hub = hub
        return try await next(request, context)
    }
}

/// In front of a route: the token must be valid for the hub and grant `rights` (401 for a
/// bad token, 403 for one without the right), for the request's path or, for the built-in
/// push service and `_inspect`, for the hub itself (`audience: .hub`). `rights` may depend
/// on the request (listing registrations by one's own handle needs only Listen).
struct Requires: RouterMiddleware {
    typealias Context = HubRequestContext
    enum Audience { case path, hub }

    let rights: @Sendable (HubRequest) throws -> AccessRights
    let responder: HubResponder
    let audience: Audience

    init(_ rights: AccessRights, of responder: HubResponder, audience: Audience = .path) {
        self.init(of: responder, audience: audience) { _ in rights }
    }

    init(of responder: HubResponder, audience: Audience = .path, rights: @escaping @Sendable (HubRequest) throws -> AccessRights)
    {
        self.rights = rights
        self.responder = responder
        self.audience = audience
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let r = HubRequest(request, context)
        let token = try responder.authorize(
            r, hub: context.hub, needs: try rights(r), audiencePath: audience == .hub ? "/\(context.hub)/" : nil)
        var context = context
        context.credential = StreamCredential(hub: context.hub, rule: token.rule.name, key: token.key, expiry: token.expiry)
        context.rights = token.rule.rights
        return try await next(request, context)
    }
}

extension HubRequestContext {
    /// A path parameter, percent-decoded.
    func parameter(_ name: String) throws -> String {
        guard let raw = parameters.get(name) else { throw HubRefusal.badRequest("The path has no \(name)") }
        return PercentEncoding.decode(raw) ?? raw
    }

    /// The `{token}` of a built-in push service path: a device token, lower-cased (400 if not).
    func deviceParameter() throws -> String {
        let token = try parameter("token")
        guard DeviceToken.isValid(token) else { throw HubRefusal.badRequest("'\(token)' is not a device token in hexadecimal") }
        return token.lowercased()
    }
}
