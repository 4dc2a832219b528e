import BreakingNewsKit
import Foundation
import NotificationHubs
import Testing

/// Issue 45, "every window tells the truth": what a home's files say after one of them was
/// found corrupt, and what a refused key is told.
struct HomeTruthTests {
    static let catalog = try! NewsCatalog.load()

    static func registeredProfile(_ categories: [String] = ["World", "Sports"]) throws -> NewsProfile {
        let profile = try NewsProfile(paths: HomeIdentityTests.paths(), catalog: Self.catalog)
        let record = RegistrationRecord(state: .registered, at: "2026-11-21T10:00:00Z", categories: categories, hub: "h")
        try profile.store.update { $0.categories = categories }
        try profile.installations.update { $0.lastRegistration = record }
        return profile
    }

    /// A defaults.json found corrupt while a window is open: the state the window is given
    /// holds the selection the warning says was restored (it held none: the file was read
    /// before the restore).
    @Test func aCorruptDefaultsFileSeenByAnOpenWindowGivesTheRestoredSelection() throws {
        let profile = try Self.registeredProfile()
        try Data("garbage{".utf8).write(to: profile.paths.defaultsFile)
        let shared = SharedHomeState.read(profile)
        let warning = try #require(shared.warning)
        #expect(warning.contains("restored from defaults.backup.json (categories World, Sports"), "\(warning)")
        #expect(shared.selection.map(\.name) == ["World", "Sports"])
        #expect(profile.selectedCategories.map(\.name) == ["World", "Sports"])
    }

    /// A corrupt defaults.json, whoever reads it first: every value comes back from the copy
    /// every save writes (the selection, both alerts, the days kept, a key of another version),
    /// and the warning says which.
    @Test func aCorruptDefaultsFileIsRestoredWhollyFromItsCopy() throws {
        let profile = try Self.registeredProfile()
        try profile.store.update {
            $0.arrivalAlerts = ArrivalAlerts(bell: true, desktop: true)
            $0.keepReceivedDays = 5
        }
        let text = try String(contentsOf: profile.paths.defaultsFile, encoding: .utf8)
        try Data(text.replacingOccurrences(of: "{", with: #"{"theme":"dark","#, options: [.anchored]).utf8).write(
            to: profile.paths.defaultsFile)
        let before = profile.store.load().values
        let config = profile.paths.configDirectory
        #expect(FileManager.default.fileExists(atPath: config.appendingPathComponent("defaults.backup.json").path))
        try Data("garbage{{{".utf8).write(to: profile.paths.defaultsFile)
        let loaded = profile.store.load()
        #expect(loaded.values == before)
        #expect(loaded.values.arrivalAlerts == ArrivalAlerts(bell: true, desktop: true))
        #expect(loaded.values.keepReceivedDays == 5)
        let warning = try #require(loaded.warning)
        #expect(
            warning.contains(
                "every value was restored from defaults.backup.json (categories World, Sports; alerts bell, desktop; "
                    + "read messages kept 5 days; 1 other setting)"), "\(warning)")
        #expect(warning.contains("still installation \(profile.identity.installationId)"), "\(warning)")
        // Written back where it was, and said where every window of the home reads it.
        #expect(DefaultsStore(url: profile.paths.defaultsFile).load().values == before)
        let note = try? String(contentsOf: config.appendingPathComponent("defaults.restored.txt"), encoding: .utf8)
        #expect(note == warning)
    }

    /// A window open while another process (a command, a window started later) finds
    /// defaults.json corrupt is told too, and given what was restored.
    @Test func anOpenWindowIsToldOfARestoreAnotherProcessMade() async throws {
        let profile = try Self.registeredProfile()
        try profile.store.update { $0.arrivalAlerts = ArrivalAlerts(bell: true, desktop: true) }
        // It looks a second from now: the command reads the file first.
        let watcher = HomeWatcher(profile: profile, interval: .seconds(1))
        try Data("garbage{{{".utf8).write(to: profile.paths.defaultsFile)
        let command = try NewsProfile(paths: profile.paths, catalog: Self.catalog)
        let said = try #require(command.warning)
        // The watch is the iterating task's work: it ends when that task is cancelled.
        let told = await withTaskGroup(of: SharedHomeState?.self) { group in
            group.addTask {
                for await state in watcher.changes where state.warning != nil { return state }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(15))
                return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
        let state = try #require(told)
        #expect(state.warning == said, "\(state.warning ?? "")")
        #expect(state.alerts == ArrivalAlerts(bell: true, desktop: true))
        #expect(state.selection.map(\.name) == ["World", "Sports"])
    }

    /// A corrupt installation.json: who the terminal is comes back from the copy every save
    /// writes, so the hub keeps one installation of it (not an old one beside a new one).
    @Test func aCorruptInstallationFileIsRestoredFromItsCopy() throws {
        let profile = try Self.registeredProfile()
        try profile.installations.update { $0.claimSecret = "secret-1" }
        let before = profile.installations.load().values
        #expect(FileManager.default.fileExists(atPath: profile.installations.backupURL.path))
        try Data("junk".utf8).write(to: profile.paths.installationFile)
        let reopened = try NewsProfile(paths: profile.paths, catalog: Self.catalog)
        #expect(reopened.identity.installationId == profile.identity.installationId)
        #expect(reopened.identity.deviceToken == profile.identity.deviceToken)
        #expect(reopened.installations.load().values == before)
        let warning = try #require(reopened.warning)
        #expect(warning.contains("restored from installation.backup.json"), "\(warning)")
        // Without a copy (a home of an earlier version), the warning says why the old one stays.
        try FileManager.default.removeItem(at: profile.installations.backupURL)
        // (The file set aside a moment ago is named by the second: moved out of the way.)
        let data = profile.paths.dataDirectory
        for name in try FileManager.default.contentsOfDirectory(atPath: data.path) where name.contains(".corrupt-") {
            try FileManager.default.removeItem(at: data.appendingPathComponent(name))
        }
        try Data("junk".utf8).write(to: profile.paths.installationFile)
        let anew = try NewsProfile(paths: profile.paths, catalog: Self.catalog)
        #expect(anew.identity.installationId != profile.identity.installationId)
        let why = try #require(anew.warning)
        #expect(why.contains("its old installation could not be removed from the hub"), "\(why)")
    }

    /// A refused signature (a Listen key rotated) names the command that prints the current
    /// connection strings, for the stream and for a registration alike.
    @Test func aRefusedKeySaysWhichConnectionStringToFetch() {
        let refused = HubError.status(401, detail: "InvalidSignature: The token has an invalid signature.")
        let stream = BuiltInPushClient.failure(refused, doing: "the stream")
        #expect(stream.isRefusal)
        #expect(stream.description.contains("'breaking-news hub connection-strings'"), "\(stream)")
        #expect(stream.description.contains("Listen connection string"), "\(stream)")
        #expect(!stream.description.contains(".."), "\(stream)")
        let subscribing = HubProblem.line(refused, doing: .subscribing, embedded: false)
        #expect(subscribing.contains("'breaking-news hub connection-strings'"), "\(subscribing)")
        #expect(subscribing.contains("BREAKING_NEWS_CONNECTION_STRING"), "\(subscribing)")
        let sending = HubProblem.line(refused, doing: .sending, embedded: false)
        #expect(sending.contains("Full connection string") && sending.contains("BREAKING_NEWS_SEND_CONNECTION_STRING"))
    }

    /// What `log --keep-days N` alone says would go is counted without pruning anything.
    @Test func whatAPruneWouldRemoveIsCountedWithoutPruning() throws {
        let log = InboxLog(url: temporaryFolder().appendingPathComponent("inbox.jsonl"))
        let deliveries = (1...3).map { InboxLogTests.delivery(Int64($0), "n\($0)", text: "Breaking World News : \($0)") }
        let old = Date().addingTimeInterval(-5 * 86_400)
        let added = try log.append(deliveries, hub: "http://h/news", categoryOf: { _ in "World" }, now: old)
        log.markRead(Array(added.prefix(2)))
        #expect(log.prunableCount(keepingDays: 2) == 2)
        #expect(log.prunableCount(keepingDays: 10) == 0)
        #expect(log.prunableCount(keepingDays: nil) == 0)
        #expect(InboxLog(url: log.url).entries.filter(\.pruned).isEmpty, "counted, not pruned")
    }
}
