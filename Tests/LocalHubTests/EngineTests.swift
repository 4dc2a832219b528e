import Foundation
import HubTestSupport
import LocalHub
import NotificationHubs
import Testing

/// The engine without HTTP, on both stores.
@Suite struct EngineTests {
    static func stores() throws -> [any HubStore] {
        let path = TestHub.temporaryDirectory().appendingPathComponent("hub.sqlite").path
        return [MemoryHubStore(), try SQLiteHubStore(path: path)]
    }

    @Test(arguments: [0, 1])
    func undispatchedNotificationsAreDeliveredAfterARestart(storeIndex: Int) async throws {
        let store = try Self.stores()[storeIndex]
        let installation = try newsInstallation("i", device: "ab12", tags: ["World"]).validatedForStorage(lastUpdate: "x")
        // As if the hub died after making the send durable but before dispatching it.
        try await store.apply([
            .upsertInstallation(hub: "news", installation),
            .insertNotification(
                StoredNotification(
                    hub: "news", id: "n1", format: .template, tagExpression: "World", body: #"{"messageParam":"late"}"#)),
        ])
        let engine = HubEngine(store: store, configuration: .init(hubs: ["news"]))
        try await engine.start()
        let running = Task { await engine.run() }
        defer { running.cancel() }
        let delivered = try await eventually("the late notification's delivery") { () async throws -> [Delivery]? in
            let delivered = try await store.deliveries(hub: "news", device: "ab12", after: 0, limit: 10)
            return delivered.isEmpty ? nil : delivered
        }
        #expect(delivered.map(\.payload) == [#"{"aps":{"alert":"late"}}"#])
        #expect(try await store.notification(hub: "news", id: "n1")?.state == .completed)
        #expect(try await store.unfinishedNotifications().isEmpty)
    }

    @Test(arguments: [0, 1])
    func recordingTwiceDoesNotDuplicate(storeIndex: Int) async throws {
        let store = try Self.stores()[storeIndex]
        var n = StoredNotification(hub: "news", id: "n", format: .apple, tagExpression: nil, body: "{}")
        try await store.apply([.insertNotification(n)])
        n.state = .completed
        let delivery = Delivery(
            seq: 1, hub: "news", device: "ab", notificationId: "n", template: "", payload: #"{"aps":{"alert":"x"}}"#,
            delivered: Date(), tags: nil)
        let first = try await store.record([DispatchRecord(notification: n, deliveries: [delivery])])
        let second = try await store.record([DispatchRecord(notification: n, deliveries: [delivery])])
        #expect(first.count == 1)
        #expect(second.isEmpty)
        #expect(try await store.deliveries(hub: "news", device: "ab", after: 0, limit: 10).count == 1)
        #expect(try await store.deleteDeliveries(hub: "news", device: "ab") == 1)
        #expect(try await store.devices(hub: "news").isEmpty)
    }

    @Test func concurrentPatchesAreNotLost() async throws {
        let engine = HubEngine(store: MemoryHubStore(), configuration: .init(hubs: ["news"]))
        try await engine.start()
        let running = Task { await engine.run() }
        defer { running.cancel() }
        let base = try newsInstallation("p", device: "ab12", tags: []).validatedForStorage(lastUpdate: "x")
        _ = try await engine.write(.putInstallation(hub: "news", base))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<50 {
                group.addTask { _ = try await engine.write(.patchInstallation(hub: "news", id: "p", [.add("/tags", "t\(i)")])) }
            }
            try await group.waitForAll()
        }
        #expect(try await engine.installation(hub: "news", id: "p")?.tags?.count == 50)
    }

    /// A push service of another platform behind the seam: it gets the messages its devices
    /// need, rendered and checked by it, and what it reports is what the send counts; only
    /// the built-in push service's deliveries go to the delivery log.
    @Test func eachPlatformIsSentThroughItsPushServiceAndItsOutcomesCount() async throws {
        let google = RecordingPushService(.fcmV1, platform: .fcmV1, refusing: "Bad-Handle")
        let store = MemoryHubStore()
        let engine = HubEngine(store: store, configuration: .init(hubs: ["news"]), pushServices: [google])
        try await engine.start()
        let running = Task { await engine.run() }
        defer { running.cancel() }
        func android(_ id: String) throws -> Installation {
            try Installation(
                installationId: id, platform: .fcmV1, pushChannel: "\(id.capitalized)-Handle", tags: ["World"],
                templates: ["t": InstallationTemplate(body: #"{"data":{"message":"$(messageParam)"}}"#)]
            ).validatedForStorage(lastUpdate: "x")
        }
        _ = try await engine.write(.putInstallation(hub: "news", try android("good")))
        _ = try await engine.write(.putInstallation(hub: "news", try android("bad")))
        _ = try await engine.write(
            .putInstallation(
                hub: "news", try newsInstallation("phone", device: "ab12", tags: ["World"]).validatedForStorage(lastUpdate: "x")))
        let outcome = try await engine.enqueueTest(
            StoredNotification(
                hub: "news", id: engine.makeNotificationId(), format: .template, tagExpression: "World",
                body: #"{"messageParam":"hi"}"#, isTest: true))
        #expect(outcome.success == 2 && outcome.failure == 1)
        #expect(Set(outcome.results.map(\.outcome)) == [NotificationOutcome.sent, "refused by the test service"])
        let sent = google.received
        // FCM tokens are case-sensitive: handed over as registered.
        #expect(Set(sent.map(\.device)) == ["Good-Handle", "Bad-Handle"])
        #expect(sent.allSatisfy { $0.payload == #"{"data":{"message":"hi"}}"# && $0.seq == 0 })
        #expect(try await store.devices(hub: "news").map(\.device) == ["ab12"])
    }

    @Test func planRendersEachDistinctTemplateOnce() async throws {
        let engine = HubEngine(store: MemoryHubStore(), configuration: .init(hubs: ["news"]))
        try await engine.start()
        let running = Task { await engine.run() }
        defer { running.cancel() }
        for i in 0..<20 {
            let installation = try newsInstallation(
                "i\(i)", device: String(format: "%04x", i), tags: [i % 2 == 0 ? "World" : "Sports"]
            )
            .validatedForStorage(lastUpdate: "x")
            _ = try await engine.write(.putInstallation(hub: "news", installation))
        }
        let plan = engine.plan(
            StoredNotification(
                hub: "news", id: "x", format: .template, tagExpression: "World", body: #"{"messageParam":"hi \"you\""}"#))
        // Ten messages for the built-in push service; nothing refused while planning.
        let messages = plan.messages[.builtIn] ?? []
        #expect(plan.messageCount == 10 && messages.count == 10)
        #expect(Set(messages.map(\.payload)) == [#"{"aps":{"alert":"hi \"you\""}}"#])
        #expect(plan.counts.isEmpty)
    }
}

/// Delivery numbers: reserved durably, never reused after a restart, and a stream that
/// opens while a batch is being committed still gets it.
@Suite struct SequenceTests {
    @Test func numbersResumeAboveTheReservationAfterARestart() async throws {
        let path = TestHub.temporaryDirectory().appendingPathComponent("hub.sqlite").path
        let store = try SQLiteHubStore(path: path)
        let first = HubEngine(store: store, configuration: .init(hubs: ["news"]))
        try await first.start()
        let running = Task { await first.run() }
        let installation = try newsInstallation("i", device: "ab12", tags: ["World"]).validatedForStorage(lastUpdate: "x")
        _ = try await first.write(.putInstallation(hub: "news", installation))
        try await first.enqueue(
            StoredNotification(hub: "news", id: "one", format: .template, tagExpression: "World", body: #"{"messageParam":"1"}"#))
        let seen = try await eventually("the first engine's delivery") { () async throws -> [Delivery]? in
            let seen = try await store.deliveries(hub: "news", device: "ab12", after: 0, limit: 10)
            return seen.isEmpty ? nil : seen
        }
        running.cancel()
        #expect(seen.map(\.seq) == [1])
        // A block was reserved: the next engine numbers above it, not from 2.
        let reopened = try SQLiteHubStore(path: path)
        #expect(try await reopened.sequenceHighWater() >= 10_000)
        let second = HubEngine(store: reopened, configuration: .init(hubs: ["news"]))
        try await second.start()
        let again = Task { await second.run() }
        defer { again.cancel() }
        try await second.enqueue(
            StoredNotification(hub: "news", id: "two", format: .template, tagExpression: "World", body: #"{"messageParam":"2"}"#))
        let after = try await eventually("the second engine's delivery") { () async throws -> [Delivery]? in
            let after = try await reopened.deliveries(hub: "news", device: "ab12", after: 1, limit: 10)
            return after.isEmpty ? nil : after
        }
        #expect(after.first.map { $0.seq > 10_000 } == true)
    }

    /// Stream frames are written directly, without a JSON tree, from shapes shared by the
    /// deliveries of one notification: they must be exactly the frames of the tree, across
    /// templates, payloads, tags, times and awkward text.
    @Test func directFramesEqualTheCanonicalFrameOfEachDelivery() throws {
        let when = Date(timeIntervalSince1970: 1_795_000_000.25)
        func delivery(_ seq: Int64, _ device: String, _ id: String, _ template: String, _ payload: String, tags: String?)
            -> Delivery
        {
            Delivery(
                seq: seq, hub: "Breaking\"News", device: device, notificationId: id, template: template, payload: payload,
                delivered: id == "n3" ? when.addingTimeInterval(1) : when, tags: tags)
        }
        let deliveries = [
            delivery(1, "aa01", "n1", "simpleAPNSTemplate", #"{"aps":{"alert":"héllo \"x\" 🚀"}}"#, tags: "World && !Sports"),
            delivery(2, "bb02", "n1", "simpleAPNSTemplate", #"{"aps":{"alert":"héllo \"x\" 🚀"}}"#, tags: "World && !Sports"),
            delivery(3, "cc03", "n1", "other", #"{"aps":{"alert":"other"}}"#, tags: "World && !Sports"),
            delivery(30, "cc04", "n1", "same body, other name", #"{"aps":{"alert":"other"}}"#, tags: "World && !Sports"),
            delivery(4, "dd04", "n1", "simpleAPNSTemplate", #"{"aps":{"alert":"\n\t"}}"#, tags: "World && !Sports"),
            delivery(5, "ee05", "n2", "", #"{"aps":{"alert":"native"}}"#, tags: nil),
            delivery(6, "ff06", "n2", "", #"{"aps":{"alert":"native"}}"#, tags: nil),
            delivery(7, "ff06", "n3", "", #"{"aps":{"alert":"native"}}"#, tags: nil),
            delivery(8, "d\"e\\v\u{7F}\u{85}é", "n3", "", #"{"aps":{"alert":"native"}}"#, tags: nil),
            delivery(Int64.max, "ff06", "n3", "", #"{"aps":{"alert":"other"}}"#, tags: nil),
        ]
        // Consecutive deliveries share one frame shape while notification, template, payload,
        // tags and time agree (as in a fan-out job), and never beyond.
        var shapes = FrameShapes()
        for delivery in deliveries {
            #expect(
                shapes.shape(of: delivery, epoch: "ep\\och").frame(seq: delivery.seq, device: delivery.device)
                    == delivery.serverSentEvent(epoch: "ep\\och"))
        }
        for delivery in deliveries {
            // The direct writer against the JSON tree's own text.
            let tree = delivery.builtInPushDelivery(epoch: "ep\\och")
            #expect(
                delivery.serverSentEvent(epoch: "ep\\och")
                    == "id: \(delivery.seq)\nevent: notification\ndata: \(tree.json.text)\n\n")
            #expect(tree.serverSentEvent == delivery.serverSentEvent(epoch: "ep\\och"))
        }
    }

    @Test func aListenerOpenedBeforeTheCommitGetsTheUnrecordedDeliveries() throws {
        let streams = DeviceStreams()
        let delivery = Delivery(
            seq: 7, hub: "News", device: "ab", notificationId: "n", template: "", payload: "{}", delivered: Date(), tags: nil)
        streams.publish([delivery], recorded: false)
        let early = try streams.listen(hub: "news", device: "AB")
        #expect(early.unrecorded.map(\.seq) == [7])
        streams.markRecorded([delivery])
        #expect(try streams.listen(hub: "news", device: "ab").unrecorded.isEmpty)
    }

    /// Batches waiting for their commit are kept whole and indexed only when a stream opens:
    /// the stream gets its own device's deliveries of every waiting batch, of its hub only,
    /// in order; a recorded batch is forgotten, and only it (review finding: recording a
    /// later batch forgot an earlier one still waiting for its commit).
    @Test func aListenerGetsItsDeviceFromEveryBatchThatWaits() throws {
        let streams = DeviceStreams()
        func delivery(_ seq: Int64, _ hub: String, _ device: String) -> Delivery {
            Delivery(
                seq: seq, hub: hub, device: device, notificationId: "n\(seq)", template: "", payload: "{}", delivered: Date(),
                tags: nil)
        }
        let first = [delivery(1, "News", "ab"), delivery(2, "Other", "ab"), delivery(3, "news", "cd"), delivery(4, "NEWS", "ab")]
        let second = [delivery(5, "news", "cd"), delivery(6, "news", "ab")]
        streams.publish(first, recorded: false)
        streams.publish(second, recorded: false)
        #expect(try streams.listen(hub: "news", device: "AB").unrecorded.map(\.seq) == [1, 4, 6])
        #expect(try streams.listen(hub: "other", device: "ab").unrecorded.map(\.seq) == [2])
        // Recording the later batch keeps the earlier one, which still waits for its commit.
        streams.markRecorded(second)
        #expect(try streams.listen(hub: "news", device: "ab").unrecorded.map(\.seq) == [1, 4])
        streams.markRecorded(first)
        #expect(try streams.listen(hub: "news", device: "cd").unrecorded.isEmpty)
    }

    static func deliveries(_ count: Int, device: String = "ab") -> [Delivery] {
        (0..<count).map {
            Delivery(
                seq: Int64($0 + 1), hub: "news", device: device, notificationId: "n\($0)", template: "t", payload: "{}",
                delivered: Date(), tags: nil)
        }
    }

    /// Issue 10 item 4: forgetting a committed batch removed each delivery from its device's
    /// list one by one, holding the registry lock: quadratic in the batch, the hub stalled.
    @Test(.timeLimit(.minutes(1)))
    func aCommittedBatchIsForgottenInOnePass() throws {
        let streams = DeviceStreams()
        let batch = Self.deliveries(200_000)
        streams.publish(batch, recorded: false)
        #expect(try streams.listen(hub: "news", device: "ab").unrecorded.count == 200_000)
        streams.markRecorded(batch)
        #expect(try streams.listen(hub: "news", device: "ab").unrecorded.isEmpty)
    }

    /// Issue 10 item 4: a stream whose client stops reading kept every delivery in memory.
    @Test(.timeLimit(.minutes(1)))
    func aStreamThatIsNotReadIsEndedNotGrown() async throws {
        let streams = DeviceStreams(bufferLimit: 100)
        let sink = BufferedStreamSink(limit: 100)
        let listener = try streams.listen(hub: "news", device: "ab", sink: sink)
        streams.publish(Self.deliveries(150))
        streams.tick()
        // Events reach a sink in a job on its loop: let it run before anything is read.
        try await sink.eventLoop.submit {}.get()
        var received = 0
        for await event in sink.events {
            if case .delivery = event { received += 1 }
        }
        #expect(received == 100)
        // Ended, but its connection is still held until its writer cancels: it still counts,
        // so streams that stop reading cannot be opened past the limits.
        #expect(streams.count == 1)
        #expect(streams.openCount(hub: "news", device: "ab") == 1)
        streams.cancel(hub: "news", device: "ab", id: listener.id)
        #expect(streams.count == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func aCancelledListenerSeesTheEnd() async throws {
        let streams = DeviceStreams()
        let listener = try streams.listen(hub: "news", device: "ab")
        streams.cancel(hub: "news", device: "ab", id: listener.id)
        for await _ in listener.events {}
        #expect(streams.count == 0)
    }

    @Test func streamsEndedForFallingBehindStillCountUntilCancelled() throws {
        let streams = DeviceStreams(maximum: 1, bufferLimit: 1)
        let slow = try streams.listen(hub: "news", device: "ab")
        streams.publish(Self.deliveries(3))
        #expect(throws: DeviceStreams.ListenRefusal.self) { try streams.listen(hub: "news", device: "cd") }
        streams.cancel(hub: "news", device: "ab", id: slow.id)
        _ = try streams.listen(hub: "news", device: "cd")
    }

    @Test func aDeviceHasAtMostItsShareOfStreams() throws {
        let streams = DeviceStreams(maximumPerDevice: 3)
        for _ in 0..<3 { _ = try streams.listen(hub: "news", device: "ab") }
        #expect(throws: DeviceStreams.ListenRefusal.self) { try streams.listen(hub: "news", device: "AB") }
        _ = try streams.listen(hub: "news", device: "cd")
    }
}

/// A push service for a platform whose real service cannot run here: it records what it
/// was given and refuses one handle, as a provider reports a bad channel.
final class RecordingPushService: PushService, @unchecked Sendable {
    let kind: PushServiceKind
    let platform: Platform
    let refusedHandle: String
    private let lock = NSLock()
    private var messages: [Delivery] = []

    init(_ kind: PushServiceKind, platform: Platform, refusing handle: String) {
        self.kind = kind
        self.platform = platform
        self.refusedHandle = handle
    }

    var keepsDeliveryLog: Bool { false }
    func serves(hub: String) -> Bool { true }
    var received: [Delivery] { lock.withLock { messages } }

    func check(_ payload: [UInt8]) -> PushOutcome? { nil }

    func push(_ sends: [PushSend]) async -> [[PushOutcome]] {
        lock.withLock { messages += sends.flatMap(\.deliveries) }
        return sends.map { send in
            send.deliveries.map {
                $0.device == refusedHandle ? .refused(name: .badChannel, text: "refused by the test service") : .delivered
            }
        }
    }
}
