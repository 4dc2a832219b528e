import BreakingNewsKit
import Foundation
import NotificationHubs
import Synchronization
import Testing

func temporaryFolder() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("bn-kit-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

struct DefaultsStoreTests {
    @Test func roundTripsAndKeepsUnknownKeys() throws {
        let url = temporaryFolder().appendingPathComponent("defaults.json")
        try Data(#"{"BreakingNewsCategories":["World"],"theme":{"dark":true}}"#.utf8).write(to: url)
        let store = DefaultsStore(url: url)
        #expect(store.load().values.categories == ["World"])
        try store.update { $0.categories = ["Sports", "Science"] }
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.contains(#""BreakingNewsCategories":["Sports","Science"]"#))
        #expect(text.contains(#""theme":{"dark":true}"#))
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
    }

    @Test func aCorruptFileIsMovedAsideWithAWarning() throws {
        let folder = temporaryFolder()
        let url = folder.appendingPathComponent("defaults.json")
        try Data(#"{"BreakingNewsCategories":["World""#.utf8).write(to: url)
        let loaded = DefaultsStore(url: url).load(now: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(loaded.values.categories.isEmpty)
        let warning = try #require(loaded.warning)
        #expect(warning.contains("defaults.json.corrupt-20270115080000"))
        let aside = folder.appendingPathComponent("defaults.json.corrupt-20270115080000")
        #expect(try String(contentsOf: aside, encoding: .utf8) == #"{"BreakingNewsCategories":["World""#)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test func identityIsMadeOnceAndStable() throws {
        let store = InstallationStore(url: temporaryFolder().appendingPathComponent("installation.json"))
        let first = try DeviceIdentity.load(from: store)
        let second = try DeviceIdentity.load(from: store)
        #expect(first == second)
        #expect(first.deviceToken.count == 64)
        #expect(DeviceToken.isValid(first.deviceToken))
        #expect(first.deviceToken == first.deviceToken.uppercased())
        #expect(first.previousDeviceToken == nil)
    }

    /// Two processes starting at once in a new home (a window and a command) must not make
    /// two identities, one of which the other overwrites: each would register its own
    /// installation. Many loaders race here; all must agree with what the file keeps.
    @Test func processesStartingAtOnceAgreeOnOneIdentity() throws {
        for _ in 0..<5 {
            let url = temporaryFolder().appendingPathComponent("installation.json")
            let found = Mutex<[DeviceIdentity]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                // A store per loader, as each process has its own.
                if let identity = try? DeviceIdentity.load(from: InstallationStore(url: url)) {
                    found.withLock { $0.append(identity) }
                }
            }
            let identities = found.withLock { $0 }
            #expect(identities.count == 8)
            #expect(Set(identities).count == 1)
            #expect(identities.first == (try DeviceIdentity.load(from: InstallationStore(url: url))))
        }
    }

    /// Issue 10 item 6: the token was SHA-256 of the installation id, so whoever learned the
    /// id could read the stream. Now it is random, and a derived one is replaced.
    @Test func deviceTokensAreRandomAndDerivedOnesAreReplaced() throws {
        func fresh() -> InstallationStore {
            InstallationStore(url: temporaryFolder().appendingPathComponent("installation.json"))
        }
        let a = try DeviceIdentity.load(from: fresh())
        let b = try DeviceIdentity.load(from: fresh())
        #expect(a.deviceToken != b.deviceToken)
        #expect(a.deviceToken != DeviceIdentity.derivedToken(for: a.installationId))
        // A home of an earlier version: its derived token is retired, kept as the previous one.
        let folder = temporaryFolder()
        let legacy = DefaultsStore(url: folder.appendingPathComponent("defaults.json"))
        let installations = InstallationStore(url: folder.appendingPathComponent("installation.json"))
        let derived = DeviceIdentity.derivedToken(for: "old-install")
        try legacy.save(.init(categories: ["World"], installationId: "old-install", deviceToken: derived))
        let migrated = try DeviceIdentity.load(from: installations, migrating: legacy)
        #expect(migrated.installationId == "old-install")
        #expect(migrated.deviceToken != derived)
        #expect(DeviceToken.isValid(migrated.deviceToken))
        #expect(migrated.previousDeviceToken == derived)
        #expect(try DeviceIdentity.load(from: installations, migrating: legacy) == migrated)
        #expect(legacy.load().values.categories == ["World"])
    }
}

struct InboxLogTests {
    static func delivery(_ seq: Int64, _ id: String, text: String, tags: String? = "World", epoch: String = "e1")
        -> BuiltInPushDelivery
    {
        BuiltInPushDelivery(
            seq: seq, notificationId: id, hub: "news", device: "ab", template: "simpleAPNSTemplate", tags: tags, deliveredAt: "t",
            payload: .object([("aps", .object([("alert", .string(text))]))]), epoch: epoch)
    }

    static let catalog = try! NewsCatalog.load()

    func append(_ log: InboxLog, _ deliveries: [BuiltInPushDelivery]) throws -> [InboxEntry] {
        try log.append(deliveries, hub: "http://h/news", categoryOf: { Self.catalog.category(of: $0)?.name })
    }

    @Test func appendsDedupesAndSurvivesReopening() throws {
        let url = temporaryFolder().appendingPathComponent("inbox.jsonl")
        let log = InboxLog(url: url)
        let added = try append(
            log, [Self.delivery(1, "a", text: "Breaking World News : one"), Self.delivery(2, "b", text: "two")])
        #expect(added.map(\.index) == [1, 2])
        #expect(try append(log, [Self.delivery(1, "a", text: "again")]).isEmpty)
        let reopened = InboxLog(url: url)
        #expect(reopened.entries.map(\.text) == ["Breaking World News : one", "two"])
        #expect(reopened.entries.map(\.category) == ["World", "World"])
        #expect(reopened.resumePoint(hubName: "news")?.seq == 2)
        #expect(reopened.resumePoint(hubName: "news")?.epoch == "e1")
        #expect(reopened.resumePoint(hubName: "other") == nil)
    }

    @Test func twoWritersOnOneFileDoNotDuplicate() throws {
        let url = temporaryFolder().appendingPathComponent("inbox.jsonl")
        let a = InboxLog(url: url)
        let b = InboxLog(url: url)
        _ = try append(a, [Self.delivery(1, "x", text: "x")])
        // b has not read the file since; it must not write x again.
        #expect(
            try append(b, [Self.delivery(1, "x", text: "x"), Self.delivery(2, "y", text: "y")]).map(\.notificationId) == ["y"])
        a.catchUp()
        #expect(a.entries.map(\.notificationId) == ["x", "y"])
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
    }

    /// Read marks are the home's, not a window's: a window marking one category read keeps
    /// what another marked in the meantime.
    @Test func readMarksFromTwoWindowsMerge() throws {
        let url = temporaryFolder().appendingPathComponent("inbox.jsonl")
        let a = InboxLog(url: url)
        _ = try append(
            a, [Self.delivery(1, "w", text: "Breaking World News : w"), Self.delivery(2, "s", text: "s", tags: "Sports")])
        let b = InboxLog(url: url)
        a.markRead(a.entries.filter { $0.category == "World" })
        b.markRead(b.entries.filter { $0.category == "Sports" })
        #expect(InboxLog(url: url).unreadCounts.isEmpty)
        #expect(a.reloadMarks().read == ReadMarks([1...2]))
    }

    /// Marks are per message: one window marking a message unread and another reading a
    /// different one leave both changes on disk (issue 12, finding 5).
    @Test func aToggleInOneWindowAndAReadInAnotherBothHold() throws {
        let url = temporaryFolder().appendingPathComponent("inbox.jsonl")
        let a = InboxLog(url: url)
        _ = try append(a, (1...4).map { Self.delivery(Int64($0), "n\($0)", text: "t\($0)") })
        let b = InboxLog(url: url)
        a.markRead(a.entries)
        b.apply(.unread(ReadMarks([2...2])))
        a.apply(.read(ReadMarks([3...3])))
        a.apply(.unread(ReadMarks([4...4])))
        #expect(InboxLog(url: url).readMarks == ReadMarks([1...1, 3...3]))
        #expect(b.reloadMarks().read == ReadMarks([1...1, 3...3]))
    }

    /// A marks file of the earlier per-category form reads as the messages it covered; a
    /// damaged one is kept aside with a warning, never written over, and reads as nothing
    /// read; none of it can make a range that overflows.
    @Test func earlierAndDamagedMarkFilesAreReadSafely() throws {
        let folder = temporaryFolder()
        let url = folder.appendingPathComponent("inbox.jsonl")
        _ = try append(
            InboxLog(url: url),
            [
                Self.delivery(1, "a", text: "a", tags: "World"), Self.delivery(2, "b", text: "b", tags: "Sports"),
                Self.delivery(3, "c", text: "c", tags: "World"),
            ])
        let marks = folder.appendingPathComponent("inbox-state.json")
        try Data(#"{"readThrough":{"World":1,"Sports":2}}"#.utf8).write(to: marks)
        #expect(InboxLog(url: url).readMarks == ReadMarks([1...2]))
        #expect(InboxLog(url: url).warning == nil)
        let max = Int.max
        for damaged in [
            #"{"read":[[3,3],[5,2]]}"#, #"{"read":[[-\#(max),\#(max)]]}"#, #"{"read":[["1",2]]}"#, #"{"read":[[1]]}"#,
            #"{"read":{}}"#, #"{"read":[[1,20]], garbage"#, "not json", #"{"other":1}"#,
        ] {
            try Data(damaged.utf8).write(to: marks)
            let log = InboxLog(url: url)
            #expect(log.readMarks.isEmpty, "\(damaged)")
            #expect(log.warning?.contains("it was kept as inbox-state.json.corrupt-") == true, "\(damaged)")
            let kept = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".corrupt-") }
            #expect(kept.count == 1)
            #expect(try String(contentsOf: folder.appendingPathComponent(kept[0]), encoding: .utf8) == damaged)
            try FileManager.default.removeItem(at: folder.appendingPathComponent(kept[0]))
            #expect(!FileManager.default.fileExists(atPath: marks.path), "moved, not copied")
        }
        try Data(#"{"read":[[3,3],[7,9]]}"#.utf8).write(to: marks)
        #expect(InboxLog(url: url).readMarks == ReadMarks([3...3, 7...9]))
    }

    /// A follower yields what any writer appended, each entry once, in order.
    @Test func aFollowerSeesEveryWritersEntriesOnce() async throws {
        let url = temporaryFolder().appendingPathComponent("inbox.jsonl")
        let mine = InboxLog(url: url)
        let other = InboxLog(url: url)
        let follower = LogFollower(log: mine, shownThrough: 0, interval: .seconds(3600))
        _ = try append(other, [Self.delivery(1, "a", text: "a")])
        _ = try append(mine, [Self.delivery(1, "a", text: "a"), Self.delivery(2, "b", text: "b")])
        follower.poll()
        _ = try append(other, [Self.delivery(3, "c", text: "c")])
        follower.poll()
        follower.poll()
        follower.stop()
        var seen: [String] = []
        for await batch in follower.entries { seen += batch.map(\.notificationId) }
        #expect(seen == ["a", "b", "c"])
    }

    /// A follower looks by itself while its `run()` runs (in its caller's task group), and
    /// its entries end once that is cancelled.
    @Test(.timeLimit(.minutes(1))) func aFollowerLooksWhileItsRunRunsAndItsEntriesEndWithIt() async throws {
        let url = temporaryFolder().appendingPathComponent("inbox.jsonl")
        let follower = LogFollower(log: InboxLog(url: url), shownThrough: 0, interval: .milliseconds(20))
        let seen = Mutex<[String]>([])
        let consumer = Task {
            for await batch in follower.entries { seen.withLock { $0 += batch.map(\.notificationId) } }
        }
        let running = Task { await follower.run() }
        // Appended by another writer, and the follower never told: its own looking finds it.
        _ = try append(InboxLog(url: url), [Self.delivery(1, "a", text: "a")])
        let deadline = ContinuousClock.now + .seconds(30)
        while seen.withLock({ $0.isEmpty }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(seen.withLock { $0 } == ["a"])
        running.cancel()
        await running.value
        // Ends by itself: the entries ended with the run.
        await consumer.value
    }

    @Test func aLineCutShortIsSkippedAndLaterWritesStayReadable() throws {
        let url = temporaryFolder().appendingPathComponent("inbox.jsonl")
        _ = try append(InboxLog(url: url), [Self.delivery(1, "a", text: "a")])
        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#"{"id":"b","seq":2,"te"#.utf8))
        try handle.close()
        let log = InboxLog(url: url)
        #expect(log.entries.map(\.notificationId) == ["a"])
        _ = try append(log, [Self.delivery(3, "c", text: "c")])
        let reopened = InboxLog(url: url)
        #expect(reopened.entries.map(\.notificationId) == ["a", "c"])
        #expect(reopened.skippedLines == 1)
    }

    @Test func unreadCountsAndMarks() throws {
        let url = temporaryFolder().appendingPathComponent("inbox.jsonl")
        let log = InboxLog(url: url)
        _ = try append(
            log,
            [
                Self.delivery(1, "a", text: "a", tags: "World"), Self.delivery(2, "b", text: "b", tags: "Sports"),
                Self.delivery(3, "c", text: "c", tags: "Sports"),
                Self.delivery(4, "d", text: "Breaking Science News : d", tags: "World || Science"),
            ])
        #expect(log.unreadCounts == ["World": 1, "Sports": 2, "Science": 1])
        log.markRead(log.entries.filter { $0.category == "Sports" })
        #expect(log.unreadCounts == ["World": 1, "Science": 1])
        #expect(InboxLog(url: url).unreadCounts == ["World": 1, "Science": 1])
        log.markRead(log.entries)
        #expect(log.unreadCounts.isEmpty)
    }
}

struct CatalogTests {
    @Test func resourcesHoldTheTutorialsFacts() throws {
        let catalog = try NewsCatalog.load()
        #expect(catalog.categories.map(\.name) == ["World", "Politics", "Business", "Technology", "Science", "Sports"])
        #expect(catalog.templateName == "simpleAPNSTemplate")
        #expect(catalog.templateBody == #"{"aps":{"alert":"$(messageParam)"}}"#)
        #expect(NewsCatalog.message("hello", category: catalog.categories[0]) == "Breaking World News : hello")
        #expect(try catalog.resolve(["sports", "WORLD"]).map(\.name) == ["World", "Sports"])
        #expect(throws: SubscribeError.self) { try catalog.resolve(["Weather"]) }
    }

    /// The category read back from a message is the one it was written for, whatever the
    /// text holds (even the words around a category name).
    @Test func aMessageNamesItsCategory() throws {
        let catalog = try NewsCatalog.load()
        for category in catalog.categories {
            for text in ["hello", "Breaking Sports News : inside", " News : ", "", "日本 🗳️"] {
                #expect(catalog.category(ofMessage: NewsCatalog.message(text, category: category)) == category)
            }
        }
        #expect(catalog.category(ofMessage: "Breaking Weather News : rain") == nil)
        #expect(catalog.category(ofMessage: "World News : no prefix") == nil)
    }

    @Test func messageTextLimits() throws {
        #expect(throws: PublishError.self) { try Publisher.validate("   ") }
        #expect(throws: PublishError.self) { try Publisher.validate(String(repeating: "é", count: 513)) }
        #expect(try Publisher.validate(" \(String(repeating: "a", count: 1024))\n") == String(repeating: "a", count: 1024))
    }
}

/// The log list's columns (issue 12, finding 8).
struct LogLayoutTests {
    @Test func theTimeColumnHasOneWidthWhateverTheDay() {
        let now = W3CDate.parse("2026-11-21T12:00:00Z")!
        for w3c in ["2026-11-21T10:00:00Z", "2026-03-02T10:00:00Z", "2024-03-02T10:00:00Z", "not a date"] {
            #expect(DisplayTime.column(w3c, now: now).count == 11, "\(w3c)")
        }
    }

    @Test func aHeadlineDropsOnlyItsOwnCategorysPrefix() {
        #expect(NewsCatalog.headline("Breaking World News : Rates hold", category: "World") == "Rates hold")
        #expect(
            NewsCatalog.headline("Breaking World News : Rates hold", category: "Sports") == "Breaking World News : Rates hold")
        #expect(NewsCatalog.headline("plain text", category: "World") == "plain text")
    }
}

/// Issue 30: the notice of messages that expired on the hub, in the received log.
struct InboxGapTests {
    @Test func aGapIsKeptOnceInItsPlaceAndTheResumePointMovesPastIt() throws {
        let url = temporaryFolder().appendingPathComponent("inbox.jsonl")
        let log = InboxLog(url: url)
        let gap = BuiltInPushGap(through: 40, expired: 12)
        let entry = try #require(try log.appendGap(gap, hub: "http://h/news", hubName: "news", epoch: "e1"))
        #expect(entry.text == "12 messages expired on the hub while this terminal was away")
        #expect(entry.gap == gap && entry.category == nil && entry.index == 1)
        // Told again (a stream cut before the resume point moved): kept once.
        #expect(try log.appendGap(gap, hub: "http://h/news", hubName: "news", epoch: "e1") == nil)
        #expect(log.resumePoint(hubName: "news")?.seq == 40)
        #expect(log.resumePoint(hubName: "news")?.epoch == "e1")
        // Another process reads it as it was written.
        let again = InboxLog(url: url)
        #expect(again.entries.map(\.gap) == [gap])
        #expect(InboxEntry.gapText(expired: nil) == "Messages expired on the hub while this terminal was away")
        #expect(InboxEntry.gapText(expired: 1) == "1 message expired on the hub while this terminal was away")
    }
}

/// Issue 30: the received log keeps what the user chooses, never an unread message, and the
/// positions survive: marks, followers and dedupe go on across a prune.
struct InboxPruneTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func delivery(_ seq: Int64) -> BuiltInPushDelivery {
        BuiltInPushDelivery(
            seq: seq, notificationId: "n\(seq)", hub: "news", device: "ab", template: "t", tags: "World", deliveredAt: "t",
            payload: .object([("aps", .object([("alert", .string("news \(seq) " + String(repeating: "x", count: 200)))]))]),
            epoch: "e1")
    }

    @Test func aPruneKeepsTheUnreadAndTheRecentAndAFollowingLogGoesOn() throws {
        let url = temporaryFolder().appendingPathComponent("inbox.jsonl")
        let log = InboxLog(url: url)
        let old = Self.now.addingTimeInterval(-10 * 86_400)
        let recent = Self.now.addingTimeInterval(-86_400)
        try log.append([Self.delivery(1), Self.delivery(2)], hub: "http://h/news", categoryOf: { _ in "World" }, now: old)
        try log.append([Self.delivery(3), Self.delivery(4)], hub: "http://h/news", categoryOf: { _ in "World" }, now: recent)
        // Read: an old one and a recent one.
        log.markRead(log.entries.filter { [1, 3].contains($0.index) })
        // Another process follows the log.
        let other = InboxLog(url: url)
        #expect(other.entries.count == 4)
        let before = try Data(contentsOf: url).count

        #expect(try log.prune(keepingDays: nil, now: Self.now) == 0, "by default everything is kept")
        #expect(try log.prune(keepingDays: 7, now: Self.now) == 1)
        #expect(try Data(contentsOf: url).count < before)
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 4, "a pruned message keeps its line, so positions stay")
        #expect(lines[0].contains(#""pruned":true"#) && !lines[0].contains("news 1"))
        #expect(log.shownEntries.map(\.index) == [2, 3, 4])
        #expect(try log.prune(keepingDays: 7, now: Self.now) == 0, "done once")

        // The follower sees the prune as a deletion, the same unread, then new arrivals.
        other.catchUpIfGrown()
        _ = other.reloadMarks()
        #expect(other.entries.count == 4)
        #expect(other.shownEntries.map(\.index) == [2, 3, 4])
        #expect(other.unreadCounts == ["World": 2])
        #expect(other.readMarks.contains(3) && !other.readMarks.contains(2))
        try log.append([Self.delivery(5)], hub: "http://h/news", categoryOf: { _ in "World" }, now: Self.now)
        other.catchUpIfGrown()
        #expect(other.entries(after: 4).map(\.seq) == [5])
        #expect(other.entries(after: 4).map(\.index) == [5])
        #expect(other.unreadCounts == ["World": 3])
        // The pruned message is still known: the stream does not bring it back, and the
        // resume point stays.
        #expect(try other.append([Self.delivery(1)], hub: "http://h/news", categoryOf: { _ in "World" }).isEmpty)
        #expect(other.resumePoint(hubName: "news")?.seq == 5)
        // A log opened afresh reads the same.
        let fresh = InboxLog(url: url)
        #expect(fresh.shownEntries.map(\.index) == [2, 3, 4, 5])
        #expect(fresh.unreadCounts == ["World": 3])
    }

    @Test func theDaysAreAPreference() throws {
        let url = temporaryFolder().appendingPathComponent("defaults.json")
        let store = DefaultsStore(url: url)
        #expect(store.load().values.keepReceivedDays == nil)
        try store.update { $0.keepReceivedDays = 30 }
        #expect(try String(contentsOf: url, encoding: .utf8).contains(#""keepReceivedDays":30"#))
        #expect(DefaultsStore(url: url).load().values.keepReceivedDays == 30)
    }
}
