import Foundation
import HubTestSupport
import LocalHub
import NotificationHubs
import TestTiers
import Testing

/// What every `HubStore` must do, run on each store: a new store (PostgreSQL next) only has
/// to pass this suite. Each test states one promise of the protocol's documentation.
@Suite(.tags(.postgres)) struct HubStoreConformanceTests {
    /// A store under test, and how to open it again as a restarted hub would.
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case memory
        case sqlite
        case postgres

        var testDescription: String { rawValue }

        /// Every store; PostgreSQL only when the whole suite runs (`make test-fast` leaves
        /// out what needs a server).
        static var inThisTier: [Kind] { TestTier.fastOnly ? [.memory, .sqlite] : allCases }

        func make() async throws -> (store: any HubStore, reopen: @Sendable () async throws -> any HubStore) {
            switch self {
            case .memory:
                // Memory lives as long as the process: reopening is the same store.
                let store = MemoryHubStore()
                return (store, { store })
            case .sqlite:
                let path = TestHub.temporaryDirectory().appendingPathComponent("hub.sqlite").path
                return (try SQLiteHubStore(path: path), { try SQLiteHubStore(path: path) })
            case .postgres:
                // A database of its own on the suite's server; reopened as another node would.
                let url = try await PostgresServer.shared().createDatabase()
                return (
                    try await PostgresHubStore.started(url: url, logger: TestHub.quietLogger),
                    { try await PostgresHubStore.started(url: url, logger: TestHub.quietLogger) }
                )
            }
        }
    }

    /// Whole seconds, which every store keeps exactly.
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func installation(_ id: String, device: String = "ab12", tags: [String] = ["World"]) throws -> Installation {
        try newsInstallation(id, device: device, tags: tags).validatedForStorage(lastUpdate: "2027-01-15T08:00:00Z")
    }

    static func registration(hub: String, id: String, device: String = "CD34", tags: [String] = ["Sports"])
        -> StoredRegistration
    {
        var registration = Registration(kind: .appleNative, deviceToken: device, tags: tags)
        registration.registrationId = id
        registration.etag = "1"
        return StoredRegistration(hub: hub, registration: registration, created: t0, updated: t0)
    }

    static func notification(hub: String = "news", _ id: String, at offset: TimeInterval = 0) -> StoredNotification {
        StoredNotification(
            hub: hub, id: id, format: .template, tagExpression: "World", body: #"{"messageParam":"\#(id)"}"#,
            enqueued: t0.addingTimeInterval(offset))
    }

    static func delivery(_ seq: Int64, hub: String = "news", device: String = "ab12", notification: String = "n1")
        -> Delivery
    {
        Delivery(
            seq: seq, hub: hub, device: device, notificationId: notification, template: "t",
            payload: #"{"aps":{"alert":"\#(seq)"}}"#, delivered: t0.addingTimeInterval(Double(seq)), tags: "World")
    }

    /// The snapshot as comparable values, in a fixed order.
    static func contents(_ snapshot: HubSnapshot) -> (installations: [String], registrations: [StoredRegistration]) {
        (
            snapshot.installations.map { "\($0.hub)/\($0.installation.installationId)/\($0.installation.tags ?? [])" }.sorted(),
            snapshot.registrations.sorted { ($0.hub, $0.id) < ($1.hub, $1.id) }
        )
    }

    @Test(arguments: Kind.inThisTier)
    func aNewStoreIsEmptyAndKeepsOneEpoch(kind: Kind) async throws {
        let (store, reopen) = try await kind.make()
        let snapshot = try await store.load()
        #expect(snapshot.installations.isEmpty && snapshot.registrations.isEmpty && snapshot.quarantined.isEmpty)
        #expect(try await store.sequenceHighWater() == 0)
        #expect(try await store.unfinishedNotifications().isEmpty)
        #expect(try await store.devices(hub: "news").isEmpty)
        let epoch = try await store.epoch()
        #expect(!epoch.isEmpty)
        #expect(try await store.epoch() == epoch)
        #expect(try await reopen().epoch() == epoch)
    }

    @Test(arguments: Kind.inThisTier)
    func mutationsApplyInOrderPerHubAndSurviveAReopen(kind: Kind) async throws {
        let (store, reopen) = try await kind.make()
        try await store.apply([
            .upsertInstallation(hub: "news", try Self.installation("a")),
            .upsertInstallation(hub: "other", try Self.installation("a", tags: ["Science"])),
            .upsertInstallation(hub: "news", try Self.installation("b")),
            // Later in the same batch wins: a replaced, b removed.
            .upsertInstallation(hub: "news", try Self.installation("a", tags: ["Politics"])),
            .deleteInstallation(hub: "news", id: "b"),
            .upsertRegistration(Self.registration(hub: "news", id: "r1")),
            .upsertRegistration(Self.registration(hub: "other", id: "r1", tags: ["World"])),
            .upsertRegistration(Self.registration(hub: "news", id: "r2")),
        ])
        try await store.apply([.deleteRegistration(hub: "news", id: "r2"), .deleteInstallation(hub: "news", id: "missing")])
        for current in [store, try await reopen()] {
            let (installations, registrations) = Self.contents(try await current.load())
            #expect(installations == ["news/a/[\"Politics\"]", "other/a/[\"Science\"]"])
            #expect(
                registrations.map { "\($0.hub)/\($0.id)/\($0.registration.tags)" } == [
                    "news/r1/[\"Sports\"]", "other/r1/[\"World\"]",
                ])
            #expect(registrations.first == Self.registration(hub: "news", id: "r1"))
        }
    }

    @Test(arguments: Kind.inThisTier)
    func notificationsWaitInOrderUntilRecordedAsFinished(kind: Kind) async throws {
        let (store, reopen) = try await kind.make()
        var direct = Self.notification("n2", at: 1)
        direct.headers = ["apns-priority": "5"]
        direct.directHandle = "ab12"
        direct.isTest = true
        try await store.apply([.insertNotification(Self.notification("n1")), .insertNotification(direct)])
        try await store.apply([.insertNotification(Self.notification("n3", at: 2))])
        #expect(try await store.unfinishedNotifications().map(\.id) == ["n1", "n2", "n3"])
        #expect(try await store.notification(hub: "news", id: "n2") == direct)
        #expect(try await store.notification(hub: "other", id: "n2") == nil)
        #expect(try await store.notification(hub: "news", id: "missing") == nil)

        var done = Self.notification("n1")
        done.state = .completed
        done.started = Self.t0.addingTimeInterval(5)
        done.ended = Self.t0.addingTimeInterval(6)
        done.outcomeCounts = ["Success": 2, "InvalidNotificationSize": 1]
        var processing = direct
        processing.state = .processing
        let written = try await store.record([
            DispatchRecord(notification: done, deliveries: [Self.delivery(1), Self.delivery(2, device: "cd34")]),
            DispatchRecord(notification: processing, deliveries: []),
        ])
        #expect(written.map(\.seq) == [1, 2])
        for current in [store, try await reopen()] {
            #expect(try await current.unfinishedNotifications().map(\.id) == ["n2", "n3"])
            #expect(try await current.notification(hub: "news", id: "n1") == done)
            #expect(try await current.notification(hub: "news", id: "n2")?.state == .processing)
        }
    }

    @Test(arguments: Kind.inThisTier)
    func deliveriesAreReadInPagesPerDeviceAndWrittenOnce(kind: Kind) async throws {
        let (store, reopen) = try await kind.make()
        try await store.apply([.insertNotification(Self.notification("n1"))])
        let mine = (1...7).map { Self.delivery(Int64($0) * 2) }
        let others = [Self.delivery(3, device: "cd34"), Self.delivery(5, hub: "other")]
        let written = try await store.record([DispatchRecord(notification: Self.notification("n1"), deliveries: others + mine)])
        #expect(written.count == 9)
        // A delivery already present (a dispatch repeated after a crash) is not written twice.
        let again = try await store.record([
            DispatchRecord(notification: Self.notification("n1"), deliveries: [Self.delivery(4), Self.delivery(20)])
        ])
        #expect(again.map(\.seq) == [20])
        for current in [store, try await reopen()] {
            #expect(try await current.deliveries(hub: "news", device: "ab12", after: 0, limit: 3).map(\.seq) == [2, 4, 6])
            #expect(
                try await current.deliveries(hub: "news", device: "ab12", after: 6, limit: 100).map(\.seq) == [8, 10, 12, 14, 20])
            #expect(try await current.deliveries(hub: "news", device: "ab12", after: 20, limit: 100).isEmpty)
            #expect(try await current.deliveries(hub: "news", device: "ab12", after: 0, limit: 1).first == Self.delivery(2))
            // A stream's start, for a device retention took nothing from: its pages alone.
            let start = try await current.backlog(hub: "news", device: "ab12", after: 0, limit: 3)
            #expect(start.gap == nil && start.deliveries.map(\.seq) == [2, 4, 6])
            #expect(
                try await current.backlog(hub: "news", device: "ab12", after: 6, limit: 100).deliveries.map(\.seq) == [
                    8, 10, 12, 14, 20,
                ])
            #expect(try await current.devices(hub: "news").map { "\($0.device)=\($0.count)" } == ["ab12=8", "cd34=1"])
            #expect(try await current.sequenceHighWater() == 20)
        }
        #expect(try await store.deleteDeliveries(hub: "news", device: "ab12") == 8)
        #expect(try await store.deleteDeliveries(hub: "news", device: "ab12") == 0)
        #expect(try await store.deliveries(hub: "news", device: "ab12", after: 0, limit: 100).isEmpty)
        #expect(try await store.deliveries(hub: "other", device: "ab12", after: 0, limit: 100).map(\.seq) == [5])
        // Gone means gone: written again, it is new (the store keeps no memory of it).
        let rewritten = try await store.record([
            DispatchRecord(notification: Self.notification("n1"), deliveries: [Self.delivery(4)])
        ])
        #expect(rewritten.map(\.seq) == [4])
    }

    /// Retention (issue 30): what is older than the horizon goes, each device's share noted as
    /// its gap; notifications that ended before it go; the log then fits its bytes.
    @Test(arguments: Kind.inThisTier)
    func retentionRemovesWhatIsOlderAndNotesWhatEachDeviceLost(kind: Kind) async throws {
        let (store, reopen) = try await kind.make()
        var old = Self.notification("old")
        var new = Self.notification("new", at: 100)
        try await store.apply([.insertNotification(old), .insertNotification(new)])
        old.state = .completed
        old.ended = Self.t0.addingTimeInterval(5)
        new.state = .completed
        new.ended = Self.t0.addingTimeInterval(105)
        func delivery(_ seq: Int64, _ device: String, _ n: String, at offset: Double) -> Delivery {
            Delivery(
                seq: seq, hub: "news", device: device, notificationId: n, template: "t", payload: #"{"aps":{"alert":"same"}}"#,
                delivered: Self.t0.addingTimeInterval(offset), tags: "World")
        }
        _ = try await store.record([
            DispatchRecord(notification: old, deliveries: [delivery(1, "aa", "old", at: 1), delivery(2, "bb", "old", at: 1)])
        ])
        _ = try await store.record([
            DispatchRecord(notification: new, deliveries: [delivery(3, "aa", "new", at: 101), delivery(4, "bb", "new", at: 101)])
        ])
        #expect(try await store.usage().deliveries == 4)
        let report = try await store.prune(before: Self.t0.addingTimeInterval(50), maximumLogBytes: 1 << 30)
        #expect(report.deliveries == 2 && report.devices == 2 && report.notifications == 1)
        for current in [store, try await reopen()] {
            #expect(try await current.deliveries(hub: "news", device: "aa", after: 0, limit: 10).map(\.seq) == [3])
            #expect(try await current.gap(hub: "news", device: "aa") == DeliveryGap(from: 1, through: 1, count: 1))
            #expect(try await current.gap(hub: "news", device: "cc") == nil)
            // A stream's start: the gap with the deliveries after it, in one read.
            let aa = try await current.backlog(hub: "news", device: "aa", after: 0, limit: 10)
            #expect(aa.gap == DeliveryGap(from: 1, through: 1, count: 1) && aa.deliveries.map(\.seq) == [3])
            #expect(try await current.backlog(hub: "news", device: "aa", after: 3, limit: 10).deliveries.isEmpty)
            #expect(
                try await current.backlog(hub: "news", device: "cc", after: 0, limit: 10)
                    == DeviceBacklog(gap: nil, deliveries: []))
            #expect(try await current.notification(hub: "news", id: "old") == nil)
            #expect(try await current.notification(hub: "news", id: "new") != nil)
            #expect(try await current.sequenceHighWater() >= 4, "numbers are never reused")
        }
        // Over its bytes, the oldest go first, whatever their age.
        let capped = try await store.prune(before: Self.t0, maximumLogBytes: 1)
        #expect(capped.deliveries == 2)
        #expect(try await store.usage().deliveries == 0)
        #expect(try await store.gap(hub: "news", device: "bb") == DeliveryGap(from: 2, through: 4, count: 2))
        try await store.compact()
    }

    @Test(arguments: Kind.inThisTier)
    func sequenceReservationsOnlyGrowAndSurviveAReopen(kind: Kind) async throws {
        let (store, reopen) = try await kind.make()
        try await store.reserveSequence(through: 100)
        try await store.reserveSequence(through: 50)
        #expect(try await store.sequenceHighWater() == 100)
        try await store.apply([.insertNotification(Self.notification("n1"))])
        _ = try await store.record([DispatchRecord(notification: Self.notification("n1"), deliveries: [Self.delivery(150)])])
        #expect(try await store.sequenceHighWater() == 150)
        try await store.reserveSequence(through: 10_000)
        #expect(try await reopen().sequenceHighWater() == 10_000)
    }

    /// Numbers never go back: a log that retention emptied keeps its high-water mark, so what
    /// is recorded next is numbered above everything given before (a shared store numbers it
    /// itself; a store of its own is numbered from its mark, as `SingleNode` does), and a
    /// device that resumes after its last number reads it, also after a reopen.
    @Test(arguments: Kind.inThisTier)
    func numbersGoOnAboveALogThatRetentionEmptied(kind: Kind) async throws {
        let (store, reopen) = try await kind.make()
        func send(_ id: String, on store: any HubStore, count: Int) async throws -> [Int64] {
            try await store.apply([.insertNotification(Self.notification(id))])
            var deliveries = (0..<count).map { _ in Self.delivery(0, notification: id) }
            if !(store is any SharedHubStore) {
                let high = try await store.sequenceHighWater()
                try await store.reserveSequence(through: high + Int64(count))
                for d in deliveries.indices { deliveries[d].seq = high + 1 + Int64(d) }
            }
            var done = Self.notification(id)
            done.state = .completed
            done.ended = Self.t0
            return try await store.record([DispatchRecord(notification: done, deliveries: deliveries)]).map(\.seq)
        }
        let first = try await send("n1", on: store, count: 3)
        let last = try #require(first.max())
        // Retention empties the log (over its cap of one byte).
        _ = try await store.prune(before: Self.t0, maximumLogBytes: 1)
        #expect(try await store.usage().deliveries == 0)
        #expect(try await store.sequenceHighWater() >= last)
        let reopened = try await reopen()
        #expect(try await reopened.sequenceHighWater() >= last, "the mark survives a reopen with the log empty")
        let second = try await send("n2", on: reopened, count: 2)
        #expect(second.count == 2 && second.allSatisfy { $0 > last }, "numbered \(second) after \(last)")
        for current in [reopened, try await reopen()] {
            #expect(try await current.deliveries(hub: "news", device: "ab12", after: last, limit: 10).map(\.seq) == second)
            let backlog = try await current.backlog(hub: "news", device: "ab12", after: last, limit: 10)
            #expect(backlog.deliveries.map(\.seq) == second)
        }
    }

    /// A claim counts from its last renewal; released, it is gone, also after a reopen.
    @Test(arguments: Kind.inThisTier)
    func claimsAreRenewedReleasedAndFoundByAge(kind: Kind) async throws {
        let (store, reopen) = try await kind.make()
        try await store.apply([
            .claimDevice(hub: "news", device: "aa", at: Self.t0),
            .claimDevice(hub: "news", device: "bb", at: Self.t0 + 10),
            .claimDevice(hub: "news", device: "cc", at: Self.t0 + 20),
        ])
        #expect(try await store.staleClaims(before: Self.t0 + 15, limit: 10).map(\.device) == ["aa", "bb"])
        // Renewed: counted from then.
        try await store.apply([.claimDevice(hub: "news", device: "aa", at: Self.t0 + 30)])
        #expect(try await store.staleClaims(before: Self.t0 + 25, limit: 10).map(\.device) == ["bb", "cc"])
        #expect(try await store.staleClaims(before: Self.t0 + 25, limit: 1).map(\.device) == ["bb"])
        try await store.apply([.releaseDevice(hub: "news", device: "bb")])
        let reopened = try await reopen()
        #expect(try await reopened.staleClaims(before: Self.t0 + 100, limit: 10).map(\.device) == ["cc", "aa"])
        #expect(try await reopened.load().claimedDevices.map(\.device).sorted() == ["aa", "cc"])
    }

    /// The same random history, applied to every store, leaves the same contents: a
    /// differential check that no store drops, reorders or merges what another keeps.
    @Test func everyStoreEndsWithTheSameContentsAfterTheSameHistory() async throws {
        var generator = SplitMix(seed: 0x5EED)
        var stores: [any HubStore] = []
        for kind in Kind.inThisTier { stores.append(try await kind.make().store) }
        for round in 0..<40 {
            var batch: [HubMutation] = []
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                let hub = ["news", "other"].randomElement(using: &generator)!
                let id = "i\(Int.random(in: 0..<8, using: &generator))"
                let tags = [["World"], ["Sports", "Science"], []].randomElement(using: &generator)!
                switch Int.random(in: 0..<4, using: &generator) {
                case 0:
                    batch.append(
                        .upsertInstallation(hub: hub, try Self.installation(id, tags: tags.isEmpty ? ["Business"] : tags)))
                case 1: batch.append(.deleteInstallation(hub: hub, id: id))
                case 2: batch.append(.upsertRegistration(Self.registration(hub: hub, id: "r" + id, tags: tags)))
                default: batch.append(.deleteRegistration(hub: hub, id: "r" + id))
                }
            }
            let deliveries = (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                Self.delivery(
                    Int64.random(in: 1...60, using: &generator), device: ["ab12", "cd34"].randomElement(using: &generator)!)
            }
            for store in stores {
                try await store.apply(batch + [.insertNotification(Self.notification("n\(round)"))])
                _ = try await store.record([DispatchRecord(notification: Self.notification("n\(round)"), deliveries: deliveries)])
            }
        }
        let first = Self.contents(try await stores[0].load())
        for store in stores.dropFirst() {
            let other = Self.contents(try await store.load())
            #expect(other.installations == first.installations)
            #expect(other.registrations == first.registrations)
            for device in ["ab12", "cd34"] {
                #expect(
                    try await store.deliveries(hub: "news", device: device, after: 0, limit: 1000)
                        == stores[0].deliveries(hub: "news", device: device, after: 0, limit: 1000))
            }
            #expect(try await store.unfinishedNotifications().map(\.id) == stores[0].unfinishedNotifications().map(\.id))
        }
    }
}

/// A small seeded generator, so a failing history can be replayed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
