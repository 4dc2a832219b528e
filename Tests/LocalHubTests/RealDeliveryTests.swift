import Crypto
import Foundation
import HubTestSupport
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// A hub with APNs credentials (issue 14, items 1, 5 and 6), against a loopback APNs: iPhones
/// get their pushes from Apple's side, terminals from the built-in push service, and what
/// APNs says about a device changes its installation and the send's telemetry.
/// Serialized: each test runs a hub and three TLS peers (one with a new RSA key), and a
/// dozen of them at once on two cores starve the rest of the suite.
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct RealDeliveryTests {
    static let template = #"{"aps":{"alert":"$(messageParam)"}}"#

    /// The loopback push services a test hub delivers through.
    struct Peers {
        let apns: APNsPeer
        let web: WebPushPeer
        let fcm: FCMPeer
    }

    /// A hub whose `providers.json` (in its data folder, found without flags) names the peers.
    static func withHub<T>(_ body: (TestHub, Peers) async throws -> T) async throws -> T {
        let apnsKey = P256.Signing.PrivateKey()
        let vapidKey = P256.Signing.PrivateKey()
        let account = try FCMPeer.ServiceAccount()
        let peers = Peers(
            apns: APNsPeer(key: apnsKey.publicKey, keyId: "ABC123DEFG", teamId: "DEF123GHIJ", topic: "com.example.news"),
            web: WebPushPeer(vapidKey: vapidKey.publicKey), fcm: FCMPeer(account: account))
        return try await peers.apns.serve { apnsURL in
            try await peers.web.serve { _ in
                try await peers.fcm.serve { fcmURL in
                    let directory = TestHub.temporaryDirectory()
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    func secret(_ name: String, _ text: String) throws -> JSONValue {
                        let file = directory.appendingPathComponent(name)
                        try Data(text.utf8).write(to: file)
                        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
                        return .string(name)
                    }
                    let apns = JSONValue.object([
                        ("keyFile", try secret("AuthKey_ABC123DEFG.p8", apnsKey.pemRepresentation)),
                        ("keyId", .string("ABC123DEFG")), ("teamId", .string("DEF123GHIJ")),
                        ("topic", .string("com.example.news")),
                        ("endpoint", .string(apnsURL)), ("caFile", .string(peers.apns.certificateFile)),
                    ])
                    let web = JSONValue.object([
                        ("vapidKeyFile", try secret("vapid.pem", vapidKey.pemRepresentation)),
                        ("subject", .string("mailto:news@example.com")), ("caFile", .string(peers.web.certificateFile)),
                        ("allowPrivateEndpoints", .bool(true)),
                    ])
                    let fcm = JSONValue.object([
                        ("serviceAccountFile", try secret("service-account.json", account.json(tokenURI: "\(fcmURL)/token"))),
                        ("endpoint", .string(fcmURL)), ("caFile", .string(peers.fcm.certificateFile)),
                    ])
                    let providers = JSONValue.object([
                        ("hubs", .object([("news", .object([("apns", apns), ("webPush", web), ("fcmV1", fcm)]))]))
                    ])
                    try Data(providers.text.utf8).write(to: directory.appendingPathComponent(PushCredentials.fileName))
                    let hub = try await TestHub.start(directory: directory)
                    do {
                        let result = try await body(hub, peers)
                        await hub.stop()
                        return result
                    } catch {
                        await hub.stop()
                        throw error
                    }
                }
            }
        }
    }

    /// A browser's installation for `subscription`, with a template for the web.
    static func browser(_ id: String, _ subscription: WebPushPeer.Subscription) throws -> Installation {
        var installation = Installation(
            installationId: id, platform: .browser, pushChannel: nil, tags: ["World"],
            templates: ["web": InstallationTemplate(body: #"{"title":"News","body":"$(messageParam)"}"#)])
        installation.pushChannel = .browser(
            endpoint: subscription.endpoint, p256dh: subscription.p256dh, auth: subscription.auth)
        return installation
    }

    /// Registers an installation on `device`, claimed first as a terminal claims its token
    /// when `claim`; the claim's secret (what the terminal's stream and inbox carry).
    @discardableResult
    static func register(_ client: HubClient, _ id: String, device: String, claim: Bool = false) async throws -> String? {
        var secret: String?
        if claim {
            secret = try await client.claimBuiltInPushDevice(device).secret
            #expect(secret != nil)
        }
        try await client.createOrUpdateInstallation(newsInstallation(id, device: device, tags: ["World"]), claimSecret: secret)
        return secret
    }

    /// Sends to World and waits until the hub has finished with the send; its details.
    static func send(_ hub: TestHub, _ text: String, tags: String = "World") async throws -> NotificationDetails {
        let client = try hub.client(hub.full)
        let receipt = try await client.send(.template(["messageParam": text]), tagExpression: tags)
        let id = try #require(receipt.notificationId)
        return try await eventually("the send to be finished") {
            let details = try? await client.notificationDetails(id: id)
            return details.flatMap { [.completed, .noTargetFound].contains($0.state) ? $0 : nil }
        }
    }

    @Test func anIPhoneAndATerminalOnOneTagEachGetTheSendOnceAndTheTerminalsTokenNeverReachesApple() async throws {
        try await Self.withHub { hub, peers in
            let peer = peers.apns
            let listen = try hub.client(hub.listen)
            let phone = randomDevice()
            let terminal = randomDevice()
            let offline = randomDevice()
            try await Self.register(listen, "phone", device: phone)
            let terminalSecret = try await Self.register(listen, "terminal", device: terminal, claim: true)
            // A terminal that registered and went away: nobody streams its news now.
            let offlineSecret = try await Self.register(listen, "offline", device: offline, claim: true)
            let details = try await Self.send(hub, "hello")
            #expect(details.apnsOutcomeCounts == ["Success": 3])
            #expect(peer.received.map(\.device) == [phone])
            #expect(peer.received.first?.body == #"{"aps":{"alert":"hello"}}"#)
            for (device, secret) in [(terminal, terminalSecret), (offline, offlineSecret)] {
                let inbox = try await listen.inbox(device: device, after: 0, epoch: nil, secret: secret)
                #expect(
                    inbox.map(\.notificationId) == [details.notificationId],
                    "resumed from the built-in push service when it comes back")
            }
            #expect(try await listen.inbox(device: phone, after: 0, epoch: nil).isEmpty, "an iPhone's pushes went to Apple")
            let away = try await listen.installation(id: "offline")
            #expect(away.pushChannelExpired != true)
        }
    }

    @Test func aGoneDeviceIsMarkedExpiredSkippedAfterAndServedAgainOnceItRegisters() async throws {
        try await Self.withHub { hub, peers in
            let peer = peers.apns
            let listen = try hub.client(hub.listen)
            let gone = randomDevice()
            let wrong = randomDevice()
            let fine = randomDevice()
            peer.behave(gone, .refuse(status: 410, reason: "Unregistered"))
            peer.behave(wrong, .refuse(status: 400, reason: "BadDeviceToken"))
            for (id, device) in [("gone", gone), ("wrong", wrong), ("fine", fine)] {
                try await Self.register(listen, id, device: device)
            }
            let first = try await Self.send(hub, "one")
            #expect(first.apnsOutcomeCounts == ["Success": 1, "ExpiredChannel": 1, "BadChannel": 1])
            for id in ["gone", "wrong"] {
                _ = try await eventually("installation \(id) to be marked expired") {
                    try await listen.installation(id: id).pushChannelExpired == true ? true : nil
                }
            }
            #expect(try await listen.installation(id: "fine").pushChannelExpired == false)
            let asked = peer.received.count
            let second = try await Self.send(hub, "two")
            #expect(second.apnsOutcomeCounts == ["Success": 1, "ExpiredChannel": 2], "not sent to the gone channels")
            #expect(peer.received.count == asked + 1 && peer.received.last?.device == fine)
            // The app came back with the same token: registered again, it is served again.
            peer.behave(gone, nil)
            try await Self.register(listen, "gone", device: gone)
            #expect(try await listen.installation(id: "gone").pushChannelExpired == false)
            let third = try await Self.send(hub, "three")
            #expect(third.apnsOutcomeCounts == ["Success": 2, "ExpiredChannel": 1])
            #expect(Set(peer.received.suffix(2).map(\.device)) == [gone, fine])
        }
    }

    @Test func aLegacyRegistrationOfAGoneDeviceIsRemoved() async throws {
        try await Self.withHub { hub, peers in
            let peer = peers.apns
            let full = try hub.client(hub.full)
            let device = randomDevice()
            peer.behave(device, .refuse(status: 410, reason: "Unregistered"))
            let registration = try await full.createOrUpdateRegistration(
                Registration(kind: .appleTemplate, deviceToken: device, tags: ["World"], bodyTemplate: Self.template))
            let id = try #require(registration.registrationId)
            let details = try await Self.send(hub, "one")
            #expect(details.apnsOutcomeCounts == ["ExpiredChannel": 1])
            _ = try await eventually("the registration to be deleted") { () -> Bool? in
                do {
                    _ = try await full.registration(id: id)
                    return nil
                } catch let error as HubError where error.status == 404 {
                    return true
                }
            }
        }
    }

    @Test func aBrowserGetsItsPushEncryptedAndAGoneSubscriptionExpires() async throws {
        try await Self.withHub { hub, peers in
            let listen = try hub.client(hub.listen)
            let reader = peers.web.subscribe()
            let gone = peers.web.subscribe(.refuse(status: 410, reason: nil))
            try await listen.createOrUpdateInstallation(try Self.browser("reader", reader))
            try await listen.createOrUpdateInstallation(try Self.browser("gone", gone))
            let first = try await Self.send(hub, "hello web")
            #expect(first.outcomeCounts[.browser] == ["Success": 1, "ExpiredChannel": 1])
            let received = try #require(peers.web.received.first { $0.subscription == reader.id })
            #expect(received.plaintext.map { String(decoding: $0, as: UTF8.self) } == #"{"title":"News","body":"hello web"}"#)
            _ = try await eventually("the installation gone to be marked expired") {
                try await listen.installation(id: "gone").pushChannelExpired == true ? true : nil
            }
            let asked = peers.web.received.count
            let second = try await Self.send(hub, "again")
            #expect(second.outcomeCounts[.browser] == ["Success": 1, "ExpiredChannel": 1])
            #expect(peers.web.received.count == asked + 1, "the gone subscription is not asked again")
        }
    }

    /// Issue 14's four platforms: one send to a tag reaches an iPhone, an Android phone, a
    /// browser and a terminal, each once, each through its own push service.
    @Test func oneSendReachesAnIPhoneAnAndroidPhoneABrowserAndATerminalOnceEach() async throws {
        try await Self.withHub { hub, peers in
            let listen = try hub.client(hub.listen)
            let phone = randomDevice()
            let terminal = randomDevice()
            let android = "dTq3-Example_FCM:Token" + String(UUID().uuidString.prefix(8))
            try await Self.register(listen, "iphone", device: phone)
            let secret = try await Self.register(listen, "terminal", device: terminal, claim: true)
            try await listen.createOrUpdateInstallation(
                Installation(
                    installationId: "android", platform: .fcmV1, pushChannel: android, tags: ["World"],
                    templates: ["fcm": InstallationTemplate(body: #"{"message":{"notification":{"body":"$(messageParam)"}}}"#)]))
            let browser = peers.web.subscribe()
            try await listen.createOrUpdateInstallation(try Self.browser("browser", browser))
            let details = try await Self.send(hub, "four")
            #expect(details.outcomeCounts == [.apns: ["Success": 2], .fcmV1: ["Success": 1], .browser: ["Success": 1]])
            // A template send names every format it was rendered for.
            #expect(details.targetPlatforms == "apple,browser,fcmv1")
            #expect(peers.apns.received.map(\.device) == [phone])
            #expect(peers.fcm.received.map(\.device) == [android], "the token as registered, case and all")
            #expect(peers.fcm.received.first?.message?["notification"]?["body"]?.stringValue == "four")
            #expect(peers.web.received.map(\.subscription) == [browser.id])
            let inbox = try await listen.inbox(device: terminal, after: 0, epoch: nil, secret: secret)
            #expect(inbox.map(\.notificationId) == [details.notificationId])
        }
    }

    @Test func anAndroidAppThatIsGoneExpiresItsChannel() async throws {
        try await Self.withHub { hub, peers in
            let listen = try hub.client(hub.listen)
            peers.fcm.script("gone-token", .unregistered)
            try await listen.createOrUpdateInstallation(
                Installation(
                    installationId: "android", platform: .fcmV1, pushChannel: "gone-token", tags: ["World"],
                    templates: ["fcm": InstallationTemplate(body: #"{"message":{"data":{"m":"$(messageParam)"}}}"#)]))
            let details = try await Self.send(hub, "x")
            #expect(details.outcomeCounts[.fcmV1] == ["ExpiredChannel": 1])
            _ = try await eventually("the android installation to be marked expired") {
                try await listen.installation(id: "android").pushChannelExpired == true ? true : nil
            }
        }
    }

    @Test func aClaimNeedsAToken() async throws {
        try await Self.withHub { hub, _ in
            let response = try await raw(.PUT, "\(hub.baseURL)/_sandbox/apns/news/devices/\(randomDevice())")
            #expect(response.status == 401)
            let listen = try hub.client(hub.listen)
            await #expect(throws: HubError.self) { try await listen.claimBuiltInPushDevice("not-hex") }
        }
    }
}

/// A provider that answers slowly holds back only its own sends (issue 14): the dispatcher
/// goes on with the next, and terminals get theirs meanwhile.
@Suite(.tags(.live), .fullSuiteOnly) struct SlowProviderTests {
    @Test func aSlowAPNsHoldsBackOnlyItsOwnSends() async throws {
        try await RealDeliveryTests.withHub { hub, peers in
            peers.apns.hold()
            let listen = try hub.client(hub.listen)
            let full = try hub.client(hub.full)
            try await RealDeliveryTests.register(listen, "iphone", device: randomDevice())
            let terminal = randomDevice()
            let secret = try await listen.claimBuiltInPushDevice(terminal).secret
            #expect(secret != nil)
            try await listen.createOrUpdateInstallation(
                newsInstallation("terminal", device: terminal, tags: ["Sports"]), claimSecret: secret)
            let slow = try #require(
                try await full.send(.template(["messageParam": "slow"]), tagExpression: "World").notificationId)
            // Its first commit is made; APNs has it and does not answer.
            _ = try await eventually("the slow send to be processing") {
                try await full.notificationDetails(id: slow).state == .processing ? true : nil
            }
            let fast = try await RealDeliveryTests.send(hub, "fast", tags: "Sports")
            #expect(fast.apnsOutcomeCounts == ["Success": 1])
            #expect(
                try await listen.inbox(device: terminal, after: 0, epoch: nil, secret: secret).map(\.notificationId)
                    == [fast.notificationId])
            #expect(try await full.notificationDetails(id: slow).state == .processing, "still with APNs")
            peers.apns.open()
            let done = try await eventually("the slow send to be completed") { () -> NotificationDetails? in
                let details = try await full.notificationDetails(id: slow)
                return details.state == .completed ? details : nil
            }
            #expect(done.apnsOutcomeCounts == ["Success": 1] && peers.apns.received.count == 1)
        }
    }
}

/// What each provider's answers do to the installation and the telemetry (issue 14, item 5),
/// beyond the gone channels above: a token of another sender is a bad channel; throttling and
/// server errors are retried, then counted, and change nothing about the device.
@Suite(.tags(.live), .fullSuiteOnly) struct ProviderAnswerTests {
    @Test func aTokenOfAnotherSenderIsABadChannelAndThrottlingAndServerErrorsAreOnlyCounted() async throws {
        try await RealDeliveryTests.withHub { hub, peers in
            let listen = try hub.client(hub.listen)
            func android(_ id: String, _ token: String) async throws {
                try await listen.createOrUpdateInstallation(
                    Installation(
                        installationId: id, platform: .fcmV1, pushChannel: token, tags: ["World"],
                        templates: ["fcm": InstallationTemplate(body: #"{"message":{"data":{"m":"$(messageParam)"}}}"#)]))
            }
            peers.fcm.script("other-sender", .senderIdMismatch)
            // Fails more often than the client retries (3), each time asking for a second's wait.
            peers.fcm.script("busy", .fail(status: 429, times: 10, retryAfter: "1"))
            try await android("mismatch", "other-sender")
            try await android("busy", "busy")
            let broken = randomDevice()
            peers.apns.behave(broken, .fail(status: 500, times: 10, retryAfter: nil))
            try await RealDeliveryTests.register(listen, "broken", device: broken)
            let details = try await RealDeliveryTests.send(hub, "x")
            #expect(details.outcomeCounts[.fcmV1] == ["BadChannel": 1, "Throttled": 1])
            #expect(details.outcomeCounts[.apns] == ["PnsServerError": 1])
            #expect(peers.fcm.received.filter { $0.device == "busy" }.count == 4, "the first try and 3 retries")
            _ = try await eventually("the mismatched installation to be marked expired") {
                try await listen.installation(id: "mismatch").pushChannelExpired == true ? true : nil
            }
            #expect(try await listen.installation(id: "busy").pushChannelExpired == false)
            #expect(try await listen.installation(id: "broken").pushChannelExpired == false)
        }
    }
}

extension RealDeliveryTests {
    /// One send renders at most 16 KB for one installation, its templates together: the
    /// rest count Dropped, so 32 templates that expand a short message cannot spend the log
    /// for everyone. Another installation of the same send is not held back.
    @Test func oneSendsRenderingsForOneInstallationStopAt16KB() async throws {
        try await TestHub.with { hub in
            let listen = try hub.client(hub.listen)
            let keys = (0..<60).map { String(format: #","k%02d":"$(messageParam)""#, $0) }.joined()
            let expanding = #"{"aps":{"alert":"$(messageParam)"}"# + keys + "}"
            var templates: [String: InstallationTemplate] = [:]
            for n in 0..<32 { templates["t\(n)"] = InstallationTemplate(body: expanding) }
            try await listen.createOrUpdateInstallation(
                Installation(
                    installationId: "amplifier", platform: .apns, pushChannel: randomDevice(), tags: ["World"],
                    templates: templates))
            try await Self.register(listen, "reader", device: randomDevice())
            let message = String(repeating: "m", count: 55)
            let details = try await Self.send(hub, message)
            // 61 × 55 bytes and the keys: about 3.9 KB a rendering, four fit in 16 KB.
            #expect(details.outcomeCounts == [.apns: ["Success": 5, "Dropped": 28]])
            let why = try await hub.client(hub.full).explain(id: details.notificationId)
            #expect(why.findings.contains { $0.contains("28 devices did not get it") && $0.contains("16 KB") }, "\(why.findings)")
        }
    }
}
