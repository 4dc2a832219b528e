import Crypto
import Foundation
import HubTestSupport
import NotificationHubs
import Synchronization
import TestTiers
import Testing

@testable import LocalHub

/// Requests the hub makes for strangers (issue 26, item 1): a browser installation, written
/// with the Listen key, names the URL an operator's send makes the hub POST to. Every
/// spelling of this machine is refused unless the operator allowed private endpoints, no
/// redirect is followed, and no byte of an answer reaches an outcome.
@Suite(.serialized) struct OutboundRequestTests {
    /// Every spelling of this machine an attacker tried on `main`.
    static let spellings = [
        "127.1", "2130706433", "0177.0.0.1", "0x7f000001", "0", "[0::1]", "[::0.0.0.1]", "[0:0::]", "[::%31]", "localhost",
    ]

    /// A hub delivering to browsers with a VAPID key, trusting `caFile`.
    static func withWebPushHub<T>(allowPrivate: Bool, caFile: String, _ body: (TestHub) async throws -> T) async throws
        -> T
    {
        let directory = TestHub.temporaryDirectory()
        try WebPushProviders.write(
            in: directory, vapidKey: P256.Signing.PrivateKey(), caFile: caFile, allowPrivateEndpoints: allowPrivate)
        let hub = try await TestHub.start(directory: directory)
        do {
            let result = try await body(hub)
            await hub.stop()
            return result
        } catch {
            await hub.stop()
            throw error
        }
    }

    /// A browser installation on `tag` whose subscription is at `endpoint`, with real keys.
    static func browser(_ id: String, endpoint: String, tag: String) -> Installation {
        var installation = Installation(
            installationId: id, platform: .browser, pushChannel: nil, tags: [tag],
            templates: ["web": InstallationTemplate(body: #"{"title":"News","body":"$(messageParam)"}"#)])
        installation.pushChannel = .browser(
            endpoint: endpoint, p256dh: Base64URL.encode(Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)),
            auth: Base64URL.encode((0..<16).map { _ in UInt8.random(in: 0...255) }))
        return installation
    }

    /// Sends to `tag` with the Full key and waits until the hub has finished with it; what
    /// `explain` says of it, as text.
    static func sendAndExplain(_ hub: TestHub, tag: String) async throws -> (NotificationDetails, String) {
        let full = try hub.client(hub.full)
        let receipt = try await full.send(.template(["messageParam": "x"]), tagExpression: tag)
        let id = try #require(receipt.notificationId)
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            let details = try await full.notificationDetails(id: id)
            if [.completed, .noTargetFound].contains(details.state) {
                return (details, String(describing: try await full.explain(id: id)))
            }
            guard ContinuousClock.now < deadline else { throw TestHubError(description: "the send did not finish") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test(.tags(.live), .fullSuiteOnly, arguments: [true, false])
    func everySpellingOfThisMachineIsReachedOnlyWhenPrivateEndpointsAreAllowed(allowPrivate: Bool) async throws {
        let secret = InternalService(.text(status: 403, body: "db_password=hunter2"))
        try await secret.serve { port in
            try await Self.withWebPushHub(allowPrivate: allowPrivate, caFile: secret.certificateFile) { hub in
                let listen = try hub.client(hub.listen)
                for (i, host) in Self.spellings.enumerated() {
                    try await listen.createOrUpdateInstallation(
                        Self.browser("b\(i)", endpoint: "https://\(host):\(port)/admin/\(i)?cmd=drop", tag: "ssrf"))
                }
                let (details, explained) = try await Self.sendAndExplain(hub, tag: "ssrf")
                let reached = Set(secret.requests.map(\.path))
                if allowPrivate {
                    // The positive control: each spelling does lead here.
                    #expect(reached == Set(Self.spellings.indices.map { "/admin/\($0)" }), "\(explained)")
                } else {
                    #expect(reached.isEmpty, "the hub reached \(reached.sorted())")
                    let counts = details.outcomeCounts[.browser] ?? [:]
                    #expect(counts["PnsUnreachable"] == Self.spellings.count, "\(counts)")
                    // Nothing on the installation tells a Listen key holder where a name led.
                    for i in Self.spellings.indices {
                        #expect(try await listen.installation(id: "b\(i)").pushChannelExpired == false)
                    }
                }
                #expect(!explained.contains("hunter2") && !explained.contains("db_password"), "\(explained)")
            }
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func redirectsAreNeverFollowed() async throws {
        let inner = InternalService(.text(status: 200, body: "dropped"))
        try await inner.serve { innerPort in
            for status in [301, 302, 303, 307, 308] {
                let outer = InternalService(
                    .redirect(status: status, location: "https://127.0.0.1:\(innerPort)/admin/r\(status)?cmd=drop"))
                try await outer.serve { outerPort in
                    try await Self.withWebPushHub(allowPrivate: true, caFile: outer.certificateFile) { hub in
                        let listen = try hub.client(hub.listen)
                        try await listen.createOrUpdateInstallation(
                            Self.browser("r", endpoint: "https://127.0.0.1:\(outerPort)/push/r", tag: "redirect"))
                        let (_, explained) = try await Self.sendAndExplain(hub, tag: "redirect")
                        #expect(outer.requests.count == 1, "asked once, not again")
                        #expect(explained.contains("Redirect"), "\(explained)")
                    }
                }
            }
            #expect(inner.requests.isEmpty, "no redirect was followed: \(inner.requests.map(\.path))")
        }
    }

    /// A subscription that could never be sent to is refused when it is stored, with a 400
    /// that names the part at fault (on `main` they were stored and refused at send time).
    @Test(.tags(.live), .fullSuiteOnly) func aBrowserSubscriptionIsCheckedWhenItIsStored() async throws {
        try await TestHub.with { hub in
            let listen = try hub.client(hub.listen)
            let good = Self.browser("b", endpoint: "https://push.example/x", tag: "t")
            try await listen.createOrUpdateInstallation(good)
            guard case .browser(_, let key, let auth)? = good.pushChannel else { return }
            let cases: [(String, String, String, String)] = [
                ("https://push.example/" + String(repeating: "x", count: 60_000), key, auth, "endpoint is 60021 bytes"),
                ("ftp://push.example/x", key, auth, "endpoint must be an https:// URL"),
                ("https://127.1:99999/", key, auth, "port"),
                ("https://push.example/x", String(repeating: "A", count: 50_000), auth, "p256dh"),
                ("https://push.example/x", key, String(repeating: "A", count: 50_000), "auth"),
            ]
            for (endpoint, p256dh, secret, saying) in cases {
                var bad = good
                bad.installationId = "bad"
                bad.pushChannel = .browser(endpoint: endpoint, p256dh: p256dh, auth: secret)
                do {
                    try await listen.createOrUpdateInstallation(bad)
                    Issue.record("stored: \(endpoint.prefix(40)) \(p256dh.prefix(20)) \(secret.prefix(20))")
                } catch let error as HubError {
                    #expect(error.status == 400 && error.description.contains(saying), "\(error)")
                }
            }
            let full = try hub.client(hub.full)
            await #expect(throws: HubError.self) { _ = try await full.installation(id: "bad") }
        }
    }

    /// The addresses that are not the public Internet, in every family and form.
    @Test(arguments: [
        ("127.0.0.1", true), ("127.255.1.2", true), ("0.0.0.0", true), ("10.9.8.7", true), ("172.16.0.1", true),
        ("172.31.255.255", true), ("192.168.0.1", true), ("169.254.169.254", true), ("100.64.0.1", true),
        ("224.0.0.1", true), ("255.255.255.255", true), ("240.0.0.1", true), ("192.0.2.1", true), ("198.18.0.1", true),
        ("::", true), ("::1", true), ("::ffff:127.0.0.1", true), ("::ffff:8.8.8.8", false), ("::127.0.0.1", true),
        ("::ffff:10.0.0.1", true), ("::ffff:169.254.169.254", true), ("64:ff9b::8.8.8.8", false), ("::8.8.8.8", true),
        ("64:ff9b::a9fe:a9fe", true), ("64:ff9b:0:0:1::808:808", true),
        ("::ffff:0:7f00:1", true), ("64:ff9b::7f00:1", true), ("64:ff9b:1::1", true), ("fe80::1", true),
        ("fec0::1", true), ("fc00::1", true), ("fd12:3456::1", true), ("ff02::1", true), ("2001:db8::1", true),
        ("2001::1", true), ("2002:7f00:1::1", true), ("100::1", true), ("2606:4700::1111", false),
        ("8.8.8.8", false), ("172.32.0.1", false), ("100.128.0.1", false), ("2607:f8b0:4004:800::200e", false),
        ("2a00:1450:4001:82b::200a", false), ("1.1.1.1", false),
    ])
    func addressesOfThisMachineAndPrivateNetworksAreRestricted(address: String, restricted: Bool) throws {
        let endpoint = try PushEndpoint(address.contains(":") ? "https://[\(address)]/" : "https://\(address)/")
        let bytes: [UInt8]
        switch endpoint.host {
        case .ipv4(let b), .ipv6(let b): bytes = b
        case .name: throw TestHubError(description: "\(address) is not an address")
        }
        #expect((OutboundAddress.restriction(bytes) != nil) == restricted)
    }

    /// A name is checked on what it resolves to, every address of it.
    @Test func aNameIsCheckedOnWhatItResolvesTo() async throws {
        let local = try PushEndpoint("https://localhost:8443/p")
        #expect(await OutboundAddress.resolve(local, allowPrivate: false) == .failure(.restricted(.loopback)))
        if case .success(let address) = await OutboundAddress.resolve(local, allowPrivate: true) {
            #expect(["127.0.0.1", "::1"].contains(address.ipAddress ?? ""))
            #expect(address.port == 8443)
        } else {
            Issue.record("localhost did not resolve")
        }
        let nowhere = try PushEndpoint("https://no-such-host.invalid/p")
        #expect(await OutboundAddress.resolve(nowhere, allowPrivate: true) == .failure(.unresolved))
    }

    /// This machine's own addresses are refused even when public (a request to its public
    /// address reaches whatever listens on all of them), in IPv4 and mapped spelling.
    @Test func thisMachinesOwnAddressesAreRefused() async throws {
        let own: @Sendable () -> Set<[UInt8]> = { [[8, 8, 4, 4]] }
        for endpoint in ["https://8.8.4.4/p", "https://[::ffff:8.8.4.4]/p"] {
            #expect(
                await OutboundAddress.resolve(try PushEndpoint(endpoint), allowPrivate: false, ownAddresses: own)
                    == .failure(.restricted(.thisMachine)), "\(endpoint)")
        }
        #expect(
            await OutboundAddress.resolve(try PushEndpoint("https://8.8.8.8/p"), allowPrivate: false, ownAddresses: own)
                != .failure(.restricted(.thisMachine)))
        // The interfaces are read: loopback is among them.
        #expect(LocalInterfaces.shared.addresses().contains([127, 0, 0, 1]))
    }

    /// A lookup that takes longer than its deadline counts as not resolving, and the answer
    /// does not wait for the resolver (a stranger's name served slowly holds no request).
    @Test func aSlowLookupEndsAtItsDeadline() async throws {
        let finished = Flag()
        let addresses = await OutboundAddress.lookUp("slow.example", deadline: .milliseconds(200)) { _ in
            Thread.sleep(forTimeInterval: 3)
            finished.set()
            return [[8, 8, 8, 8]]
        }
        #expect(addresses.isEmpty)
        #expect(!finished.isSet, "the answer came before the resolver finished")
    }

    final class Flag: Sendable {
        private let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }
}
