import Foundation
import HTTPTypes
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import LocalHubSupport
import Logging
import NIOCore
import NIOHTTP1
import NotificationHubs

@testable import LocalHub

/// The hub's route table in process, on the memory store, without a socket: requests go
/// straight to the router (HummingbirdTesting's `.router`), which answers as the server does,
/// middleware and all. What `TestHub` is to tests that need a socket, this is to tests of
/// HTTP behaviour: the same names (`baseURL`, `listen`, `full`, `token`, `raw`), and the
/// engine and the router made as the server makes them (`HubApplication`), the engine started
/// and run by the server's own `EngineService`.
struct RouterHub: Sendable {
    /// What the router sees as the authority of every request.
    let baseURL = "http://localhost"
    let hub: String
    let listen: ConnectionString
    let full: ConnectionString
    let engine: HubEngine
    /// The keys served, for `connectionString(rule:)`.
    let keys: HubKeys
    /// HummingbirdTesting's client of the router, for a test that speaks `HTTPFields`.
    let client: any TestClientProtocol

    private init(hub: String, keys: HubKeys, engine: HubEngine, client: any TestClientProtocol) throws {
        self.hub = hub
        self.engine = engine
        self.client = client
        self.keys = keys
        listen = try Self.connectionString(hub: hub, rule: AuthorizationRule.listenRuleName, keys: keys)
        full = try Self.connectionString(hub: hub, rule: AuthorizationRule.fullRuleName, keys: keys)
    }

    /// The connection string of `rule` of the hub `listen` and `full` are for.
    func connectionString(rule: String) throws -> ConnectionString {
        try Self.connectionString(hub: hub, rule: rule, keys: keys)
    }

    private static func connectionString(hub: String, rule: String, keys: HubKeys) throws -> ConnectionString {
        guard let key = keys.key(hub: hub, rule: rule) else { throw TestHubError(description: "no rule \(rule)") }
        return try ConnectionString(
            parsing: LocalHubKeyFile.connectionString(baseURL: "http://localhost", hub: hub, rule: rule, key: key))
    }

    /// Runs `body` with the router of a hub serving `hubs` (the first is the one `listen` and
    /// `full` are for, and the one `rules` are added to), configured as `TestHub` configures
    /// a hub; the engine is stopped after.
    static func with(
        hubs: [String] = ["news"], rules: [(name: String, rights: AccessRights)] = [], store: any HubStore = MemoryHubStore(),
        configure: (inout LocalHubConfiguration) -> Void = { _ in }, _ body: @Sendable (RouterHub) async throws -> Void
    ) async throws {
        let directory = TestHub.temporaryDirectory()
        var configuration = LocalHubConfiguration(dataDirectory: directory, hubs: hubs)
        configuration.clientRates = .unlimited
        configure(&configuration)
        var made = try HubKeys.loadOrCreate(in: directory, hubs: hubs)
        for rule in rules { made = try HubKeys.change(.add(rule: rule.name, rights: rule.rights), hub: hubs[0], in: directory) }
        let keys = made
        let limits = ConnectionLimits(configuration: configuration, logger: TestHub.quietLogger)
        let served = HubApplication(
            store: store, configuration: configuration, keys: keys, secret: "router-hub",
            maximumStreams: limits.streams, logger: TestHub.quietLogger)
        // Not among the application's services: the test framework would run those with
        // the process's SIGTERM and SIGINT taken over.
        let engine = EngineService(engine: served.engine)
        try await withService(engine) {
            try await engine.waitUntilStarted()
            let app = Application(responder: served.router().buildResponder(), logger: TestHub.quietLogger)
            try await app.test(.router) { client in
                try await body(try RouterHub(hub: hubs[0], keys: keys, engine: served.engine, client: client))
            }
        }
    }

    /// A token of `connectionString` for `resource` (default: the hub URL).
    func token(_ connectionString: ConnectionString, resource: String? = nil, lifetime: TimeInterval = 3600) -> String {
        connectionString.token(hub: hub, resource: resource, lifetime: lifetime)
    }

    /// One request, as `raw` sends it to a live hub; `url` starts with `baseURL`.
    func raw(
        _ method: HTTPMethod, _ url: String, headers: [(String, String)] = [], body: String? = nil
    ) async throws -> RawResponse {
        precondition(url.hasPrefix(baseURL), "\(url) is not on \(baseURL)")
        var fields = HTTPFields()
        for (name, value) in headers { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        let response = try await client.executeRequest(
            uri: String(url.dropFirst(baseURL.count)), method: HTTPRequest.Method(method.rawValue)!, headers: fields,
            body: body.map { ByteBuffer(string: $0) })
        return RawResponse(
            status: Int(response.status.code), headers: HTTPHeaders(response.headers.map { ($0.name.rawName, $0.value) }),
            body: String(buffer: response.body))
    }

    /// Stores `installation` with the Listen key, as a device does: a test's set-up.
    func put(_ installation: Installation, claimSecret: String? = nil) async throws {
        try Self.expectStored(try await putting(installation, claimSecret: claimSecret))
    }

    /// `PUT /{hub}/installations/{id}` of `installation` as `HubClient` sends it, with the key
    /// `as` (default Listen) and the claim secret of its push channel when given; the answer,
    /// whatever it is.
    func putting(_ installation: Installation, as key: ConnectionString? = nil, claimSecret: String? = nil) async throws
        -> RawResponse
    {
        try await installationCall(
            .PUT, installation.installationId, key: key, contentType: "application/json", body: installation.json.text,
            claimSecret: claimSecret)
    }

    /// A request to `/{hub}/installations/{id}` as `HubClient` sends it, with the key `key`
    /// (default Listen).
    func installationCall(
        _ method: HTTPMethod, _ id: String, key: ConnectionString? = nil, contentType: String? = nil, body: String? = nil,
        claimSecret: String? = nil
    ) async throws -> RawResponse {
        var headers = [("Authorization", token(key ?? listen))]
        if let contentType { headers.append(("Content-Type", contentType)) }
        if let claimSecret { headers.append((BuiltInPushDelivery.claimSecretHeader, claimSecret)) }
        return try await raw(
            method, "\(baseURL)/\(hub)/installations/\(id)?api-version=2020-06", headers: headers, body: body)
    }

    /// Stores `registration` under a new id with the Listen key, as a device does: a test's set-up.
    func put(_ registration: Registration) async throws {
        var registration = registration
        registration.registrationId = HubEngine.makeRegistrationId()
        try Self.expectStored(
            try await raw(
                .PUT, "\(baseURL)/\(hub)/registrations/\(registration.registrationId!)",
                headers: [("Authorization", token(listen)), ("Content-Type", "application/atom+xml;type=entry;charset=utf-8")],
                body: registration.requestEntryXML))
    }

    private static func expectStored(_ response: RawResponse) throws {
        guard [200, 201].contains(response.status) else {
            throw TestHubError(description: "set-up refused with \(response.status): \(response.body)")
        }
    }
}
