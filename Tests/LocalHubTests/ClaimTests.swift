import AsyncHTTPClient
import Foundation
import HubTestSupport
import NIOCore
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// Claims belong to someone (issue 26, item 3): one nothing uses expires, a terminal can let
/// its own go, an operator any, one client cannot fill the table, and a full table says so.
@Suite struct ClaimTests {
    static func claim(
        _ hub: TestHub, _ device: String, token: String? = nil, secret: String? = nil, client: HTTPClient? = nil
    ) async throws -> RawResponse {
        try await call(
            hub, .PUT, BuiltInPushDelivery.path(hub: "news", device: device), token: token, secret: secret, client: client)
    }

    /// The secret a first claim answered.
    static func secret(of response: RawResponse) -> String? {
        (try? JSONValue(parsing: response.body))?["secret"]?.stringValue
    }

    static func call(
        _ hub: TestHub, _ method: HTTPMethod, _ path: String, token: String? = nil, secret: String? = nil,
        client: HTTPClient? = nil
    ) async throws -> RawResponse {
        var request = HTTPClientRequest(url: hub.baseURL + path)
        request.method = method
        request.headers.add(name: "Authorization", value: token ?? hub.token(hub.listen))
        if let secret { request.headers.add(name: BuiltInPushDelivery.claimSecretHeader, value: secret) }
        let response = try await (client ?? HubClient.sharedHTTPClient).execute(request, timeout: .seconds(30))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        return RawResponse(status: Int(response.status.code), headers: response.headers, body: text)
    }

    /// The devices the hub lists as claimed (Manage).
    static func claimed(_ hub: TestHub) async throws -> Set<String> {
        Set(try await hub.client(hub.full).builtInPushDevices().filter(\.claimed).map(\.device))
    }

    @Test(.tags(.live), .fullSuiteOnly) func aClaimNothingUsesIsLetGoAndOneInUseIsKept() async throws {
        try await TestHub.with(configure: { $0.claimLifetime = .seconds(2) }) { hub in
            let (unused, installed, streaming) = (randomDevice(), randomDevice(), randomDevice())
            var secrets: [String: String] = [:]
            for device in [unused, installed, streaming] {
                let claimed = try await Self.claim(hub, device)
                #expect(claimed.status == 200)
                secrets[device] = Self.secret(of: claimed)
            }
            try await hub.client(hub.listen).createOrUpdateInstallation(
                newsInstallation("i", device: installed, tags: ["World"]), claimSecret: secrets[installed])
            // A stream held open the whole time.
            let stream = Task { [secrets] in
                try? await readStream(
                    baseURL: hub.baseURL, hub: "news", device: streaming, token: hub.token(hub.listen),
                    secret: secrets[streaming], count: 1, timeout: 30)
            }
            defer { stream.cancel() }
            let deadline = ContinuousClock.now + .seconds(30)
            while try await Self.claimed(hub).contains(unused), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(try await Self.claimed(hub) == [installed, streaming])
            // Let go, its token streams no more: the hub knows nothing of it.
            let gone = try await Self.call(
                hub, .GET, BuiltInPushDelivery.path(hub: "news", device: unused, resource: "stream"), secret: secrets[unused])
            #expect(gone.status == 404 && gone.errorDetail?.contains("not registered") == true, "\(gone.body)")
        }
    }

    /// Claiming again is not use (the review of issue 26: re-claiming every few days kept a
    /// stranger's claims forever).
    @Test(.tags(.live), .fullSuiteOnly) func claimingAgainDoesNotKeepAClaimNothingUses() async throws {
        try await TestHub.with(configure: { $0.claimLifetime = .seconds(2) }) { hub in
            let device = randomDevice()
            let first = try await Self.claim(hub, device)
            #expect(first.status == 200)
            let secret = Self.secret(of: first)
            let deadline = ContinuousClock.now + .seconds(30)
            var released = false
            while ContinuousClock.now < deadline, !released {
                // Held, claiming again changes nothing (204); once let go, a claim is a new one,
                // answered with a new secret (200).
                let again = try await Self.claim(hub, device, secret: secret)
                #expect([200, 204].contains(again.status))
                released = again.status == 200
                if released { break }
                try await Task.sleep(for: .milliseconds(300))
                released = try await !Self.claimed(hub).contains(device)
            }
            #expect(released, "re-claimed every 0.3 s, it was never let go")
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func aTerminalLetsItsClaimGoAndAnOperatorAny() async throws {
        try await TestHub.with { hub in
            let device = randomDevice()
            let claimed = try await Self.claim(hub, device)
            #expect(claimed.status == 200)
            let secret = Self.secret(of: claimed)
            let path = BuiltInPushDelivery.path(hub: "news", device: device)
            // Without its secret a Listen key lets nothing go: the token alone is not the terminal.
            #expect(try await Self.call(hub, .DELETE, path).status == 404)
            #expect(try await Self.claimed(hub) == [device])
            #expect(try await Self.call(hub, .DELETE, path, secret: secret).status == 204)
            #expect(try await Self.call(hub, .DELETE, path, secret: secret).status == 404)
            #expect(try await Self.claimed(hub).isEmpty)
            // The operator's client (Manage) lets any go, without a secret, and lists what is claimed.
            let other = randomDevice()
            #expect(try await Self.claim(hub, other).status == 200)
            #expect(try await Self.claimed(hub) == [other])
            let operatorClient = try hub.client(hub.full)
            #expect(try await operatorClient.releaseBuiltInPushDevice(other))
            let again = try await operatorClient.releaseBuiltInPushDevice(other)
            #expect(!again)
            // Listing needs Manage.
            #expect(try await Self.call(hub, .GET, "/_sandbox/apns/news/devices").status == 403)
        }
    }

    /// Issue 30: a terminal that unregisters (its installation, then its claim) leaves nothing
    /// of its device: the claim takes its deliveries with it. A claim let go of a device an
    /// installation still uses keeps them.
    @Test(.tags(.live), .fullSuiteOnly) func lettingGoOfADeviceNothingUsesLeavesNothingOfIt() async throws {
        try await TestHub.with { hub in
            let (gone, kept) = (randomDevice(), randomDevice())
            var secrets: [String: String] = [:]
            for device in [gone, kept] {
                let claimed = try await Self.claim(hub, device)
                #expect(claimed.status == 200)
                secrets[device] = Self.secret(of: claimed)
                try await hub.client(hub.listen).createOrUpdateInstallation(
                    newsInstallation("i-\(device)", device: device, tags: ["World"]), claimSecret: secrets[device])
            }
            _ = try await hub.client(hub.full).send(.template(["messageParam": "hi"]), tagExpression: "World")
            let deadline = ContinuousClock.now + .seconds(30)
            while try await hub.client(hub.full).builtInPushDevices().filter({ $0.deliveries == 1 }).count < 2,
                ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(50))
            }
            try await hub.client(hub.listen).deleteInstallation(id: "i-\(gone)")
            #expect(try await hub.client(hub.listen).releaseBuiltInPushDevice(gone, secret: secrets[gone]))
            #expect(try await hub.client(hub.full).releaseBuiltInPushDevice(kept))
            let devices = try await hub.client(hub.full).builtInPushDevices()
            #expect(devices.map(\.device) == [kept], "\(devices)")
            #expect(devices.first?.deliveries == 1 && devices.first?.claimed == false)
        }
    }

    /// 100,000 claims of random tokens made with the Listen key once filled the table, and
    /// every new terminal's subscribe failed after them with a message about keys.
    @Test(.tags(.live), .fullSuiteOnly) func oneClientCannotFillTheClaimTable() async throws {
        let rates = ClientRates(newDevicesPerHour: 5, bytesPerHour: 1 << 20, streams: 0)
        try await TestHub.with(configure: { $0.clientRates = rates }) { hub in
            var statuses: [Int] = []
            var secrets: [String: String] = [:]
            for _ in 0..<8 {
                let device = randomDevice()
                let claimed = try await Self.claim(hub, device)
                statuses.append(claimed.status)
                secrets[device.lowercased()] = Self.secret(of: claimed)
            }
            #expect(statuses == [200, 200, 200, 200, 200, 429, 429, 429])
            let refused = try await Self.claim(hub, randomDevice())
            #expect(refused.headers.first(name: "Retry-After").flatMap(Int.init).map { $0 > 0 } == true)
            #expect(refused.errorDetail?.contains("has added 5 devices within the hour") == true, "\(refused.body)")
            // Claiming one it holds again is no new device; nor is updating an installation.
            let held = try await hub.client(hub.full).builtInPushDevices().first { $0.claimed }!.device
            #expect(try await Self.claim(hub, held, secret: secrets[held]).status == 204)
            // A new installation is a new device too.
            await #expect(throws: HubError.self) {
                try await hub.client(hub.listen).createOrUpdateInstallation(newsInstallation("n", device: held, tags: ["World"]))
            }
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func aFullTableSaysWhatIsFullNotThatTheKeyIsWrong() async throws {
        try await TestHub.with(configure: { $0.maximumInstallationsPerHub = 2 }) { hub in
            #expect(try await Self.claim(hub, randomDevice()).status == 200)
            #expect(try await Self.claim(hub, randomDevice()).status == 200)
            let full = try await Self.claim(hub, randomDevice())
            #expect(full.status == 403)
            #expect(full.errorDetail?.contains("holds 2 devices") == true && full.errorDetail?.contains("let go") == true)
            do {
                _ = try await hub.client(hub.listen).claimBuiltInPushDevice(randomDevice())
                Issue.record("claimed in a full table")
            } catch {
                #expect(!"\(error)".contains("key"), "\(error)")
            }
        }
    }

    /// Clients are told apart by address, through a trusted proxy by `X-Forwarded-For`.
    @Test func clientsAreTheirAddressesOrWhatATrustedProxySays() throws {
        let loopback = try SocketAddress(ipAddress: "127.0.0.1", port: 5)
        let trusted = try TrustedProxies(["127.0.0.1", "10.0.0.0/8"])
        func key(_ peer: SocketAddress, _ forwarded: [String], _ proxies: TrustedProxies = trusted) -> String {
            RequestClient.of(peer: peer, forwardedFor: forwarded, trusted: proxies).key
        }
        #expect(key(loopback, []) == "loopback")
        #expect(key(loopback, ["203.0.113.9"]) == "203.0.113.9")
        #expect(key(loopback, ["203.0.113.9", "10.1.1.1"]) == "203.0.113.9", "trusted hops are skipped")
        #expect(key(loopback, ["198.51.100.1, 203.0.113.9"]) == "203.0.113.9", "only the nearest untrusted hop counts")
        #expect(key(loopback, ["203.0.113.9"], .none) == "loopback", "an untrusted peer's header is ignored")
        #expect(key(try SocketAddress(ipAddress: "192.0.2.4", port: 5), ["203.0.113.9"]) == "192.0.2.4")
        #expect(key(try SocketAddress(ipAddress: "2001:db8:1:2:3:4:5:6", port: 5), []) == "2001:db8:1:2::/64")
        #expect(key(try SocketAddress(ipAddress: "::ffff:192.0.2.4", port: 5), []) == "192.0.2.4")
        #expect(key(loopback, ["not an address"]) == "forwarded:unreadable")
        // Every address of this machine is one client, however written.
        for local in ["127.0.0.2", "127.255.255.254", "::1", "::ffff:127.0.0.1", "::ffff:127.9.9.9"] {
            #expect(key(try SocketAddress(ipAddress: local, port: 5), [], .none) == "loopback", "\(local)")
        }
        // A proxy on a dual-stack socket (`::ffff:10.1.1.1`) is the proxy named in IPv4,
        // and a proxy named mapped matches the IPv4 peer.
        #expect(key(try SocketAddress(ipAddress: "::ffff:10.1.1.1", port: 5), ["203.0.113.9"]) == "203.0.113.9")
        #expect(key(try SocketAddress(ipAddress: "::ffff:192.0.2.4", port: 5), ["::ffff:10.1.1.1"]) == "192.0.2.4")
        let mappedProxy = try TrustedProxies(["::ffff:192.0.2.0/120"])
        #expect(key(try SocketAddress(ipAddress: "192.0.2.4", port: 5), ["203.0.113.9"], mappedProxy) == "203.0.113.9")
        #expect(key(try SocketAddress(ipAddress: "192.0.2.4", port: 5), ["::ffff:198.51.100.3"], mappedProxy) == "198.51.100.3")
        #expect(throws: LocalHubStartError.self) { try TrustedProxies(["::ffff:10.0.0.0/8"]) }
        #expect(throws: LocalHubStartError.self) { try TrustedProxies(["10.0.0.0/33"]) }
        #expect(throws: LocalHubStartError.self) { try TrustedProxies(["example.com"]) }
    }

    @Test func aClaimLifetimeIsSaidInItsOwnUnit() {
        #expect(ClaimKeeper.describe(.seconds(2)) == "1 minute")
        #expect(ClaimKeeper.describe(.seconds(600)) == "10 minutes")
        #expect(ClaimKeeper.describe(.seconds(3600)) == "1 hour")
        #expect(ClaimKeeper.describe(.seconds(7 * 86_400)) == "7 days")
    }
}
