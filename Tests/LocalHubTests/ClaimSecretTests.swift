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
            .PUT, hub.baseURL + BuiltInPushDelivery.path(hub: "news", device: device),
            headers: [("Authorization", hub.token(hub.listen))]
                + (secret.map { [(BuiltInPushDelivery.claimSecretHeader, $0)] } ?? [])
        )
    }

    static func call(
        _ hub: RouterHub, _ method: HTTPMethod, _ device: String, _ resource: String?, secret: String?,
        key: ConnectionString? = nil
    ) async throws -> RawResponse {
        let path =
            resource.map { BuiltInPushDelivery.path(hub: "news", device: device, resource: $0) }
            ?? BuiltInPushDelivery.path(hub: "news", device: device)
        return try await hub.raw(
            method, hub.baseURL + path,
            headers: [("Authorization", hub.token(key ?? hub.listen))]
                + (secret.map { [(BuiltInPushDelivery.claimSecretHeader, $0)] } ?? []))
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
            #expect(BuiltInPushClaim.isSecret(secret))
            try await hub.put(newsInstallation("t", device: device, tags: ["World"]), claimSecret: secret)
            #expect(try await Self.send(hub, "private", token: hub.token(hub.full)).status == 201)
            let read = try await eventually("the private message in the inbox") { () async throws -> RawResponse? in
                let page = try await Self.call(hub, .GET, device, "inbox", secret: secret)
                return page.body.contains("private") ? page : nil
            }
            #expect(read.status == 200)
            // What a token the hub does not know is told (the tracking id and time aside).
            func said(_ response: RawResponse) -> String? { response.errorDetail?.components(separatedBy: "TrackingId").first }
            let unknown = said(try await Self.call(hub, .GET, randomDevice(), "stream", secret: nil))
            // Without the secret, or with another, the token is a token the hub does not know.
            // An inbox of a token the hub knows nothing of (no deliveries either) answers so too.
            let unknownInbox = try await Self.call(hub, .GET, randomDevice(), "inbox", secret: nil)
            #expect(unknownInbox.status == 404 && said(unknownInbox) == unknown)
            for wrong in [nil, BuiltInPushClaim.makeSecret(), "short", String(repeating: "x", count: 10_000)] {
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

    /// A claimed token is a push channel only of its terminal's installation (issue 44's
    /// review): another's installation or registration on it, made with the Listen key and the
    /// token, would put news of its own in the terminal's log, and keep what was delivered to
    /// the token once the terminal let it go, for the token alone to read. 409, unless the
    /// write carries the claim's secret (or a Manage key); once the terminal lets its claim go,
    /// nothing of the token is kept.
    @Test func aClaimedTokenIsThePushChannelOfItsTerminalOnly() async throws {
        try await RouterHub.with { hub in
            let device = randomDevice().lowercased()
            let secret = try #require(ClaimTests.secret(of: try await Self.claim(hub, device)))
            try await hub.put(newsInstallation("terminal", device: device, tags: ["World"]), claimSecret: secret)
            let other = newsInstallation("other", device: device, tags: ["World"])
            for proof in [nil, BuiltInPushClaim.makeSecret()] {
                let refused = try await hub.putting(other, claimSecret: proof)
                #expect(refused.status == 409 && refused.errorDetail?.contains("only its terminal names it") == true)
            }
            // Nor by a PATCH that moves an installation's channel to it.
            try await hub.put(newsInstallation("moving", device: randomDevice(), tags: ["World"]))
            let patch = try await hub.installationCall(
                .PATCH, "moving", contentType: "application/json-patch+json",
                body: #"[{"op":"replace","path":"/pushChannel","value":"\#(device)"}]"#)
            #expect(patch.status == 409, "\(patch.body)")
            // Nor by a registration.
            var registration = Registration(kind: .appleNative, deviceToken: device, tags: ["World"])
            registration.registrationId = "reg-1"
            let atom = try await hub.raw(
                .PUT, "\(hub.baseURL)/news/registrations/reg-1?api-version=2020-06",
                headers: [
                    ("Authorization", hub.token(hub.listen)), ("Content-Type", "application/atom+xml;type=entry;charset=utf-8"),
                ], body: registration.requestEntryXML)
            #expect(atom.status == 409, "\(atom.body)")
            // An operator may.
            #expect(try await hub.putting(other, as: hub.full).status == 200)
            #expect(try await hub.installationCall(.DELETE, "other", key: hub.full).status == 204)
            // The terminal lets go: its installation, then its claim; nothing of the token stays.
            #expect(try await Self.send(hub, "private", token: hub.token(hub.full)).status == 201)
            _ = try await eventually("the private message in the inbox") { () async throws -> Bool? in
                try await Self.call(hub, .GET, device, "inbox", secret: secret).body.contains("private") ? true : nil
            }
            #expect(try await hub.installationCall(.DELETE, "terminal").status == 204)
            #expect(try await Self.call(hub, .DELETE, device, nil, secret: secret).status == 204)
            let after = try await Self.call(hub, .GET, device, "inbox", secret: nil)
            #expect(!after.body.contains("private"), "\(after.body)")
        }
    }

    /// A claim whose stored digest is unreadable (written by hand) fails closed: no secret opens
    /// it, a claim of it is 409, and its terminal takes a new token.
    @Test func aClaimWhoseDigestIsUnreadableOpensNothing() async throws {
        let path = TestHub.temporaryDirectory().appendingPathComponent("hub.sqlite").path
        let store = try SQLiteHubStore(path: path)
        let device = randomDevice().lowercased()
        try await store.apply([
            .claimDevice(hub: "news", device: device, at: Date(), secretDigest: String(repeating: "A", count: 64))
        ])
        try await store.pool.write { db in
            try db.execute(sql: "UPDATE sandbox_device SET secret_hash = 'not a digest'")
        }
        try await RouterHub.with(store: store) { hub throws in
            for secret: String? in [nil, BuiltInPushClaim.makeSecret()] {
                #expect(try await Self.call(hub, .GET, device, "inbox", secret: secret).status == 404)
                #expect(try await Self.claim(hub, device, secret: secret).status == 409)
            }
        }
    }

    /// Two nodes on one database, each asked at once for the first claim of one token: one
    /// claim is answered its secret, every other one 409 (the later commit meets the claim
    /// made since it was resolved, and a digest a claim holds is never replaced).
    @Test(.tags(.live, .postgres), .fullSuiteOnly) func concurrentFirstClaimsOnTwoNodesGiveOneSecret() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let (first, second) = (
            try await TestHub.start(configure: {
                $0.storeURL = url
                $0.nodeName = "a"
            }),
            try await TestHub.start(configure: {
                $0.storeURL = url
                $0.nodeName = "b"
            })
        )
        do {
            for _ in 0..<8 {
                let device = randomDevice().lowercased()
                let statuses = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                    for hub in [first, second, first, second, first, second] {
                        group.addTask {
                            let answer = try await ClaimTests.claim(hub, device)
                            return (answer.status, ClaimTests.secret(of: answer))
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(
                    statuses.filter { $0.0 == 200 }.count == 1 && statuses.allSatisfy { [200, 409].contains($0.0) },
                    "\(statuses.map(\.0))")
                let secret = try #require(statuses.first { $0.0 == 200 }?.1)
                for hub in [first, second] {
                    let stream = try await ClaimTests.call(
                        hub, .GET, BuiltInPushDelivery.path(hub: "news", device: device, resource: "inbox"), secret: secret)
                    #expect(stream.status == 200, "the secret answered works on both nodes")
                }
            }
        } catch {
            await first.stop()
            await second.stop()
            throw error
        }
        await first.stop()
        await second.stop()
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
            let secret = ClaimTests.secret(of: try await Self.claim(hub, device))
            try await hub.put(newsInstallation("t", device: device, tags: ["World"]), claimSecret: secret)
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
