import Foundation
import HubTestSupport
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// Device tokens stay secret (issue 44, item 5): a claimed token opens nothing without its
/// claim's secret, a claim cannot be taken from its terminal or from an iPhone, and a test
/// send shows a terminal's token only to Manage.
@Suite struct ClaimSecretTests {
    static func claim(_ hub: RouterHub, _ device: String, secret: String? = nil) async throws -> RawResponse {
        try await hub.raw(
            .PUT, hub.baseURL + SandboxDelivery.path(hub: "news", device: device),
            headers: [("Authorization", hub.token(hub.listen))] + (secret.map { [(SandboxDelivery.claimSecretHeader, $0)] } ?? [])
        )
    }

    static func call(
        _ hub: RouterHub, _ method: HTTPMethod, _ device: String, _ resource: String?, secret: String?,
        key: ConnectionString? = nil
    ) async throws -> RawResponse {
        let path =
            resource.map { SandboxDelivery.path(hub: "news", device: device, resource: $0) }
            ?? SandboxDelivery.path(hub: "news", device: device)
        return try await hub.raw(
            method, hub.baseURL + path,
            headers: [("Authorization", hub.token(key ?? hub.listen))]
                + (secret.map { [(SandboxDelivery.claimSecretHeader, $0)] } ?? []))
    }

    static func send(_ hub: RouterHub, _ text: String, token: String, test: Bool = false) async throws -> RawResponse {
        try await hub.raw(
            .POST, "\(hub.baseURL)/news/messages?api-version=2020-06\(test ? "&test" : "")",
            headers: [
                ("Authorization", token), ("ServiceBusNotification-Format", "template"),
                ("ServiceBusNotification-Tags", "World"), ("Content-Type", "application/json"),
            ], body: #"{"messageParam":"\#(text)"}"#)
    }

    @Test func aClaimedTokenOpensNothingWithoutItsSecret() async throws {
        try await RouterHub.with { hub in
            let device = randomDevice().lowercased()
            let first = try await Self.claim(hub, device)
            #expect(first.status == 200 && first.headers.first(name: "Content-Type")?.hasPrefix("application/json") == true)
            let secret = try #require(ClaimTests.secret(of: first))
            #expect(SandboxClaim.isSecret(secret))
            try await hub.put(newsInstallation("t", device: device, tags: ["World"]))
            #expect(try await Self.send(hub, "private", token: hub.token(hub.full)).status == 201)
            let read = try await RealDeliveryTests.eventually { () async throws -> RawResponse? in
                let page = try await Self.call(hub, .GET, device, "inbox", secret: secret)
                return page.body.contains("private") ? page : nil
            }
            #expect(read.status == 200)
            // What a token the hub does not know is told (the tracking id and time aside).
            func said(_ response: RawResponse) -> String? { response.errorDetail?.components(separatedBy: "TrackingId").first }
            let unknown = said(try await Self.call(hub, .GET, randomDevice(), "stream", secret: nil))
            // Without the secret, or with another, the token is a token the hub does not know.
            for wrong in [nil, SandboxClaim.makeSecret(), "short", String(repeating: "x", count: 10_000)] {
                for resource in ["inbox", "stream"] {
                    let refused = try await Self.call(hub, .GET, device, resource, secret: wrong)
                    #expect(refused.status == 404 && said(refused) == unknown, "\(resource): \(refused.body)")
                    #expect(!refused.body.contains("private"))
                }
                let release = try await Self.call(hub, .DELETE, device, nil, secret: wrong)
                let releaseUnknown = try await Self.call(hub, .DELETE, randomDevice(), nil, secret: wrong)
                #expect(release.status == 404 && said(release) == said(releaseUnknown), "\(release.body)")
                // Nor can it claim the token: 409, and the claim stays its terminal's.
                #expect(try await Self.claim(hub, device, secret: wrong).status == 409)
            }
            #expect(try await hub.engine.claimedDevices(hub: "news") == [device])
            // The terminal claims again with its secret (204, nothing issued), and an operator
            // (Manage) reads the device without one.
            let again = try await Self.claim(hub, device, secret: secret)
            #expect(again.status == 204 && again.body.isEmpty)
            #expect(try await Self.call(hub, .GET, device, "inbox", secret: nil, key: hub.full).status == 200)
            #expect(try await Self.call(hub, .DELETE, device, nil, secret: secret).status == 204)
        }
    }

    /// The token of an iPhone an installation registered (never claimed) cannot be claimed:
    /// on a hub with APNs credentials the claim would turn its news away from Apple, to
    /// whoever claimed it. A terminal claims before it registers.
    @Test func aTokenAnInstallationUsesUnclaimedCannotBeClaimed() async throws {
        try await RouterHub.with { hub in
            let phone = randomDevice()
            try await hub.put(newsInstallation("phone", device: phone, tags: ["World"]))
            let refused = try await Self.claim(hub, phone)
            #expect(refused.status == 409 && refused.errorDetail?.contains("claims its token before it registers") == true)
            #expect(try await hub.engine.claimedDevices(hub: "news").isEmpty)
        }
    }

    /// A claim made before claims had secrets asks for none, until it is claimed again: the
    /// first claim then is answered a secret, and from then on the secret is asked for.
    @Test func aClaimOfBeforeSecretsIsGivenOneByItsNextClaim() async throws {
        let store = MemoryHubStore()
        let device = randomDevice().lowercased()
        try await store.apply([.claimDevice(hub: "news", device: device, at: Date())])
        try await RouterHub.with(store: store) { hub in
            #expect(try await Self.call(hub, .GET, device, "inbox", secret: nil).status == 200)
            let first = try await Self.claim(hub, device)
            #expect(first.status == 200)
            let secret = try #require(ClaimTests.secret(of: first))
            #expect(try await Self.call(hub, .GET, device, "inbox", secret: nil).status == 404)
            #expect(try await Self.call(hub, .GET, device, "inbox", secret: secret).status == 200)
        }
        // The store keeps its digest, never the secret.
        let kept = try #require(try await store.load().claimedDevices.first)
        #expect(kept.secretDigest?.count == 64)
    }

    /// A test send names each device's handle; a terminal's token (the built-in service's)
    /// only to a Manage key, to others its first 16 hex digits and `…`, which the SDKs read as
    /// they read any handle.
    @Test func aTestSendShowsATerminalsTokenOnlyToManage() async throws {
        try await RouterHub.with(rules: [("backend", [.send])]) { hub in
            let device = randomDevice().lowercased()
            _ = try await Self.claim(hub, device)
            try await hub.put(newsInstallation("t", device: device, tags: ["World"]))
            let sender = hub.token(try hub.connectionString(rule: "backend"))
            let cut = try await Self.send(hub, "shown", token: sender, test: true)
            #expect(cut.status == 201 && cut.headers.first(name: "Content-Type")?.contains("utf-8") == true)
            let handles = try NotificationOutcome(xml: cut.body).results.map(\.pnsHandle)
            #expect(handles == [String(device.prefix(16)) + "…"], "\(cut.body)")
            #expect(!cut.body.lowercased().contains(device))
            let whole = try await Self.send(hub, "shown", token: hub.token(hub.full), test: true)
            #expect(try NotificationOutcome(xml: whole.body).results.map { $0.pnsHandle.lowercased() } == [device])
        }
    }
}
