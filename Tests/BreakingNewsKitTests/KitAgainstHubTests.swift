import BreakingNewsKit
import Foundation
import HubTestSupport
import LocalHub
import NotificationHubs
import TestTiers
import Testing

/// The app's core against a real hub on loopback.
@Suite(.tags(.live), .fullSuiteOnly) struct KitAgainstHubTests {
    static let catalog = try! NewsCatalog.load()

    func profile() throws -> NewsProfile {
        let root = temporaryFolder()
        return try NewsProfile(
            paths: Paths(
                configDirectory: root.appendingPathComponent("config"), dataDirectory: root.appendingPathComponent("data")),
            catalog: Self.catalog)
    }

    func endpoint(_ hub: TestHub, listenOnly: Bool = false) -> HubEndpoint {
        HubEndpoint(listen: hub.listen, send: listenOnly ? hub.listen : hub.full, hubName: hub.hub)
    }

    @Test func subscribeStoresThenRegistersTheTutorialsInstallation() async throws {
        try await TestHub.with { hub in
            let profile = try profile()
            let subscriber = profile.subscriber(endpoint(hub))
            let outcome = try await subscriber.subscribe(["sports", "World"])
            #expect(outcome.record.state == .registered)
            #expect(profile.store.load().values.categories == ["World", "Sports"])
            let installation = try await hub.client(hub.listen).installation(id: profile.identity.installationId)
            #expect(installation.platform == .apns)
            #expect(installation.pushChannel == .handle(profile.identity.deviceToken))
            #expect(installation.tags == ["World", "Sports"])
            #expect(installation.templates?["simpleAPNSTemplate"]?.body == #"{"aps":{"alert":"$(messageParam)"}}"#)
            // An empty selection registers no tags.
            _ = try await subscriber.subscribe([])
            #expect(try await hub.client(hub.listen).installation(id: profile.identity.installationId).tags == nil)
            await #expect(throws: SubscribeError.self) { try await subscriber.subscribe(["Weather"]) }
            #expect(profile.store.load().values.categories.isEmpty)
        }
    }

    @Test func anUnreachableHubLeavesTheSelectionPending() async throws {
        let profile = try profile()
        let closed = try ConnectionString(parsing: "Endpoint=http://127.0.0.1:1/;SharedAccessKeyName=k;SharedAccessKey=v")
        let subscriber = profile.subscriber(HubEndpoint(listen: closed, send: closed, hubName: "news"))
        let outcome = try await subscriber.subscribe(["Politics"])
        #expect(outcome.record.state == .pending)
        #expect(outcome.error?.isUnreachable == true)
        #expect(profile.store.load().values.categories == ["Politics"])
        #expect(profile.lastRegistration?.state == .pending)
        // Retrying with backoff reports each attempt until told to stop.
        var attempts = 0
        for await attempt in subscriber.registerUntilDone(
            try profile.catalog.resolve(["Politics"]), backoff: Backoff(base: 0.01, maximum: 0.02))
        {
            #expect(attempt.record.state == .pending)
            attempts += 1
            if attempts == 3 { break }
        }
        #expect(attempts == 3)
    }

    /// A throttled hub says when to come back; registration retries wait that long, not the
    /// backoff's first step (a lower bound: a slow machine only waits longer).
    @Test func registrationRetriesHonourRetryAfter() async throws {
        let hub = ScriptedServer([(503, "1")])
        try await hub.serve { port in
            let cs = try ConnectionString(
                parsing: "Endpoint=http://127.0.0.1:\(port)/;SharedAccessKeyName=k;SharedAccessKey=dg==")
            let subscriber = try profile().subscriber(HubEndpoint(listen: cs, send: cs, hubName: "news"))
            let start = ContinuousClock.now
            var states: [RegistrationRecord.State] = []
            for await attempt in subscriber.registerUntilDone(
                try Self.catalog.resolve(["World"]), backoff: Backoff(base: 0.01, maximum: 0.02))
            {
                states.append(attempt.record.state)
            }
            #expect(states == [.pending, .registered])
            #expect(ContinuousClock.now - start >= .seconds(1))
            // The throttled claim of the device; then the claim and the installation.
            #expect(hub.requests == 3)
        }
    }

    @Test func publisherSendsOneTemplatePerCategory() async throws {
        try await TestHub.with { hub in
            let results = try await profile().publisher(endpoint(hub)).send("hello", to: Self.catalog.categories)
            #expect(results.map(\.category.name) == Self.catalog.categories.map(\.name))
            #expect(
                results.allSatisfy { (try? $0.result.get().notificationId) != nil }, "\(results.map { "\($0.result)" })")
            // With only a Listen key every category fails with 403, none is skipped.
            let refused = try await profile().publisher(endpoint(hub, listenOnly: true)).send(
                "hello", to: Self.catalog.categories)
            #expect(refused.count == 6)
            #expect(
                refused.allSatisfy {
                    if case .failure(let error) = $0.result { return error.status == 403 } else { return false }
                })
        }
    }

    @Test func receiverGetsNewsResumesAfterAHubRestartAndDedupes() async throws {
        let directory = TestHub.temporaryDirectory()
        try await TestHub.with(directory: directory, keepAlive: .milliseconds(200)) { first in
            let profile = try profile()
            let endpoint = endpoint(first)
            _ = try await profile.subscriber(endpoint).subscribe(["World"])
            // What a window sees: the log's new entries (through the follower the receiver tells)
            // and the receiver's connection.
            let follower = LogFollower(log: profile.log, shownThrough: 0, interval: .milliseconds(50))
            let receiver = InboxReceiver(
                builtInPush: profile.builtInPush(endpoint), log: profile.log, catalog: Self.catalog, follower: follower,
                backoff: Backoff(base: 0.05, maximum: 0.2))
            let (merged, sink) = AsyncStream<InboxUpdate>.makeStream()
            // The follower's and the receiver's work, and what they say, in tasks of the test's own.
            let workers = [
                Task { await follower.run() },
                Task { await receiver.run() },
                Task { for await entries in follower.entries { sink.yield(.received(entries)) } },
                Task { for await status in receiver.statuses { sink.yield(.status(status)) } },
            ]
            defer { workers.forEach { $0.cancel() } }
            var updates = merged.makeAsyncIterator()
            var statuses: [ConnectionStatus] = []
            func next(_ count: Int) async -> [String] {
                var texts: [String] = []
                while texts.count < count, let update = await updates.next() {
                    switch update {
                    case .received(let entries): texts += entries.map(\.text)
                    case .status(let status): statuses.append(status)
                    }
                }
                return texts
            }
            /// Reads on until the receiver reports `wanted` (it may come after the news it opened for).
            func waitFor(_ wanted: ConnectionStatus) async {
                while !statuses.contains(wanted), let update = await updates.next() {
                    if case .status(let status) = update { statuses.append(status) }
                }
            }
            let publisher = profile.publisher(endpoint)
            // A send that failed would leave the reads below waiting for news that never comes.
            for text in ["one", "two"] {
                let sent = try await publisher.send(text, to: [Self.catalog.categories[0]])
                try #require(sent.allSatisfy { (try? $0.result.get()) != nil }, "\(sent)")
            }
            #expect(await next(2) == ["Breaking World News : one", "Breaking World News : two"])

            await first.stop()
            try await TestHub.with(directory: directory, port: first.port, keepAlive: .milliseconds(200)) { hub in
                let sent = try await profile.publisher(self.endpoint(hub)).send("three", to: [Self.catalog.categories[0]])
                try #require(sent.allSatisfy { (try? $0.result.get()) != nil }, "\(sent)")
                statuses = []
                #expect(await next(1) == ["Breaking World News : three"])
                // A hub back within the receiver's quiet tries is not an outage: nothing is
                // said. One that took longer is said as reconnecting, then online again; never
                // anything else.
                if statuses.contains(where: { if case .reconnecting = $0 { true } else { false } }) {
                    await waitFor(.online)
                    #expect(statuses.last == .online, "\(statuses)")
                } else {
                    #expect(statuses.allSatisfy { $0 == .online }, "\(statuses)")
                }
                receiver.stop()
                #expect(
                    profile.log.entries.map(\.text) == [
                        "Breaking World News : one", "Breaking World News : two", "Breaking World News : three",
                    ])
                #expect(profile.log.unreadCounts == ["World": 3])
            }
        }
    }

    /// A home of an earlier version keeps its old device token as the previous one until what
    /// arrived for it is fetched; that fetch starts at the beginning, not where the current
    /// token's stream stopped (sequence numbers are the hub's, so an older delivery to the old
    /// token lies before it).
    @Test func whatArrivedForThePreviousTokenIsFetchedEvenBehindTheLogsResumePoint() async throws {
        try await TestHub.with { hub in
            let root = temporaryFolder()
            let paths = Paths(
                configDirectory: root.appendingPathComponent("config"), dataDirectory: root.appendingPathComponent("data"))
            let derived = DeviceIdentity.derivedToken(for: "old-install")
            try DefaultsStore(url: paths.defaultsFile).save(
                .init(categories: ["World"], installationId: "old-install", deviceToken: derived))
            // The earlier version registered the derived token and news arrived for it.
            try await hub.client(hub.listen).createOrUpdateInstallation(
                newsInstallation("old-install", device: derived, tags: ["World"]))
            let endpoint = endpoint(hub)
            _ = try await hub.client(hub.full).send(.template(["messageParam": "for the old token"]), tagExpression: "World")
            // The new version registers its own token; its stream brings the next news first.
            let profile = try NewsProfile(paths: paths, catalog: Self.catalog)
            #expect(profile.identity.previousDeviceToken == derived)
            try await hub.client(hub.listen).createOrUpdateInstallation(
                newsInstallation("old-install", device: profile.identity.deviceToken, tags: ["World"]))
            _ = try await hub.client(hub.full).send(.template(["messageParam": "for the new token"]), tagExpression: "World")
            let current = try await profile.builtInPush(endpoint).deliveries(after: 0, epoch: nil)
            _ = try profile.log.append(current.deliveries, hub: endpoint.hubURL, categoryOf: { _ in "World" })
            _ = try await profile.sync(endpoint)
            #expect(Set(profile.log.entries.map(\.text)) == ["for the old token", "for the new token"])
            await profile.retirePreviousDevice(endpoint)
            #expect(profile.installations.load().values.previousDeviceToken == nil)
            #expect(profile.log.entries.count == 2)
        }
    }

    /// A home of a version whose claims had no secrets (issue 44): its token may have been
    /// shown to others, so the first start gives it a new one, claimed with a secret kept in
    /// `installation.json` (0600). What arrived for the old token is fetched, and its claim
    /// let go; from then on the terminal's stream and inbox carry the secret, and the token
    /// alone opens nothing.
    @Test func anUpgradedHomeReplacesItsTokenOnceAndClaimsWithASecret() async throws {
        let old = DeviceIdentity.randomToken()
        // The earlier version's hub held the old token's claim, without a secret.
        let folder = TestHub.temporaryDirectory()
        let earlier = try SQLiteHubStore(path: folder.appendingPathComponent("hub.sqlite").path)
        try await earlier.apply([.claimDevice(hub: "news", device: old.lowercased(), at: Date())])
        try await TestHub.with(directory: folder) { hub in
            let root = temporaryFolder()
            let paths = Paths(
                configDirectory: root.appendingPathComponent("config"), dataDirectory: root.appendingPathComponent("data"))
            try InstallationStore(url: paths.installationFile).save(.init(installationId: "up-1", deviceToken: old))
            try DefaultsStore(url: paths.defaultsFile).save(.init(categories: ["World"]))
            // The earlier version had registered it; news came.
            try await hub.client(hub.listen).createOrUpdateInstallation(newsInstallation("up-1", device: old, tags: ["World"]))
            _ = try await hub.client(hub.full).send(.template(["messageParam": "before"]), tagExpression: "World")
            let endpoint = endpoint(hub)
            let profile = try NewsProfile(paths: paths, catalog: Self.catalog)
            let identity = profile.identity
            #expect(identity.installationId == "up-1" && identity.deviceToken != old && identity.previousDeviceToken == old)
            #expect(try NewsProfile(paths: paths, catalog: Self.catalog).identity == identity, "replaced once")
            let outcome = await profile.subscriber(endpoint).register(profile.selectedCategories)
            #expect(outcome.record.state == .registered, "\(String(describing: outcome.error))")
            let kept = profile.installations.load().values
            let secret = try #require(kept.claimSecret)
            #expect(BuiltInPushClaim.isSecret(secret))
            let mode = try FileManager.default.attributesOfItem(atPath: paths.installationFile.path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            #expect(
                try await hub.client(hub.listen).installation(id: "up-1").pushChannel == .handle(identity.deviceToken))
            // Retired: the old token's news is in the log, its claim gone.
            #expect(kept.previousDeviceToken == nil)
            #expect(profile.log.entries.map(\.text) == ["before"])
            let devices = try await hub.client(hub.full).builtInPushDevices()
            #expect(devices.first { $0.device == old.lowercased() }?.claimed != true)
            // The new token: news reaches the terminal with its secret, not without.
            _ = try await hub.client(hub.full).send(.template(["messageParam": "after"]), tagExpression: "World")
            _ = try await eventually("the news after") {
                try await profile.builtInPush(endpoint).deliveries(after: 0, epoch: nil).deliveries.isEmpty ? nil : true
            }
            await #expect(throws: HubError.self) {
                _ = try await hub.client(hub.listen).inbox(device: identity.deviceToken, after: 0, epoch: nil)
            }
        }
    }

    /// `breaking-news installation --new-device-token`'s core: a terminal whose token leaked
    /// gets a new one; the old claim, with its secret, is let go after what it holds is fetched.
    @Test func aNewTokenReplacesOneThatLeaked() async throws {
        try await TestHub.with { hub in
            let profile = try profile()
            let endpoint = endpoint(hub)
            _ = try await profile.subscriber(endpoint).subscribe(["World"])
            let first = profile.currentIdentity
            let firstSecret = try #require(profile.installations.load().values.claimSecret)
            _ = try await hub.client(hub.full).send(.template(["messageParam": "to the old"]), tagExpression: "World")
            _ = try await eventually("the news to the old token") {
                try await profile.builtInPush(endpoint).deliveries(after: 0, epoch: nil).deliveries.isEmpty ? nil : true
            }
            let replaced = try DeviceIdentity.replaceToken(in: profile.installations)
            #expect(replaced.deviceToken != first.deviceToken && replaced.previousDeviceToken == first.deviceToken)
            #expect(replaced.previousClaimSecret == firstSecret && replaced.claimSecret == nil)
            let outcome = await profile.subscriber(endpoint).register(profile.selectedCategories)
            #expect(outcome.record.state == .registered)
            let values = profile.installations.load().values
            #expect(values.previousDeviceToken == nil && values.claimSecret != nil && values.claimSecret != firstSecret)
            #expect(profile.log.entries.map(\.text) == ["to the old"])
            let devices = try await hub.client(hub.full).builtInPushDevices()
            #expect(devices.filter(\.claimed).map(\.device) == [replaced.deviceToken.lowercased()])
        }
    }

    /// A receiver does nothing until its `run()`, in its caller's task; stopped before that,
    /// the run ends at once, its statuses ending with `.stopped`; it runs only once.
    @Test func aReceiverReceivesInItsRunAndOneStoppedFirstEndsAtOnce() async throws {
        try await TestHub.with { hub in
            let profile = try profile()
            let endpoint = endpoint(hub)
            _ = try await profile.subscriber(endpoint).subscribe(["World"])
            let receiver = InboxReceiver(builtInPush: profile.builtInPush(endpoint), log: profile.log, catalog: Self.catalog)
            receiver.stop()
            await receiver.run()
            var statuses: [ConnectionStatus] = []
            for await status in receiver.statuses { statuses.append(status) }
            #expect(statuses.last == .stopped, "\(statuses)")
            #expect(!statuses.contains(.online), "\(statuses)")
            await receiver.run()
        }
    }

    @Test func aHubWithoutBuiltInPushIsReportedNotPretended() async throws {
        try await TestHub.with { hub in
            let profile = try profile()
            // A hub name this server does not serve: its built-in push service answers 404, as Azure would.
            let elsewhere = HubEndpoint(listen: hub.listen, send: hub.full, hubName: "azure-hub")
            let receiver = InboxReceiver(builtInPush: profile.builtInPush(elsewhere), log: profile.log, catalog: Self.catalog)
            var last: ConnectionStatus?
            async let receiving: Void = receiver.run()
            for await status in receiver.statuses { last = status }
            await receiving
            #expect(last == .stopped || last == .offline(.noPushService))
            await #expect(throws: StreamFailure.noPushService) { try await profile.sync(elsewhere) }
        }
    }
}
