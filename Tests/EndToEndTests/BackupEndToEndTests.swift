import BreakingNewsKit
import Foundation
import HubTestSupport
import LocalHub
import LocalHubSupport
import NotificationHubs
import Synchronization
import TestTiers
import Testing

/// Issue 31: `hub backup` of a hub that serves, `hub restore` into a stopped hub's folder, and
/// `hub migrate` between SQLite and PostgreSQL, driven through the built binary.
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct BackupEndToEndTests {
    /// Reads `device`'s stream, resumed after `seq` of `epoch` as the receiver resumes it,
    /// until what arrived is `enough`, or 90 s passed: what arrived by then.
    static func streamed(
        _ client: HubClient, device: String, secret: String?, after seq: Int64, epoch: String?,
        until enough: @escaping @Sendable ([BuiltInPushDelivery]) -> Bool
    ) async throws -> [BuiltInPushDelivery] {
        let received = Received()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await batch in try await client.deviceStream(device: device, after: seq, epoch: epoch, secret: secret) {
                    let all = received.deliveries.withLock {
                        $0 += batch.deliveries
                        return $0
                    }
                    if enough(all) { return }
                }
            }
            group.addTask { try await Task.sleep(for: .seconds(90)) }
            try await group.next()
            group.cancelAll()
        }
        return received.deliveries.withLock { $0 }
    }

    static func send(_ client: HubClient, _ text: String) async throws -> String {
        let receipt = try await client.send(.template(["messageParam": text]), tagExpression: "World")
        return try #require(receipt.notificationId)
    }

    /// A client of `hub` at `url` with the key the app shipped.
    static func client(url: String, hub: String = "news", rule: String, key: String) throws -> HubClient {
        try HubClient(
            connectionString: ConnectionString(
                parsing: LocalHubKeyFile.connectionString(baseURL: url, hub: hub, rule: rule, key: key)))
    }

    static func keys(in folder: URL) throws -> (text: String, listen: String, full: String) {
        let url = folder.appendingPathComponent(LocalHubKeyFile.fileName)
        let text = try String(contentsOf: url, encoding: .utf8)
        let keys = try #require(try LocalHubKeyFile.read(url)["news"])
        return (
            text, try #require(keys[AuthorizationRule.listenRuleName]), try #require(keys[AuthorizationRule.fullRuleName])
        )
    }

    /// A backup taken during a burst of sends, restored into a fresh folder and served: every
    /// send acknowledged before the backup began is there, the restored hub starts a new
    /// epoch, and receivers resuming from points of the old hub get every message once, after
    /// the received log's dedupe by notification and template, as the app's is.
    @Test func aBackupTakenDuringABurstRestoresEveryAcknowledgedSendAndReceiversGetEachOnce() async throws {
        let user = Command.freshHome()
        let folder = TestHub.temporaryDirectory()
        let restored = TestHub.temporaryDirectory().appendingPathComponent("restored")
        let backup = TestHub.temporaryDirectory().appendingPathComponent("news.backup")
        let device = randomDevice()
        // Two terminals' received logs: one that read only the first messages, one that read
        // everything the old hub delivered.
        let early = InboxLog(url: user.home.appendingPathComponent("early/inbox.jsonl"))
        let late = InboxLog(url: user.home.appendingPathComponent("late/inbox.jsonl"))
        var acknowledgedBeforeBackup: Set<String> = []
        var oldEpoch = ""
        // The claim's secret: the restored hub keeps the claim, and asks its terminal for it.
        var secret: String?
        try await HubProcess.with(directory: folder) { hub throws in
            let listen = try HubClient(connectionString: hub.listen)
            let full = try HubClient(connectionString: hub.full)
            secret = try #require(try await listen.claimBuiltInPushDevice(device).secret)
            try await listen.createOrUpdateInstallation(
                newsInstallation("terminal", device: device, tags: ["World"]), claimSecret: secret)
            var first: Set<String> = []
            for i in 1...5 { first.insert(try await Self.send(full, "before \(i)")) }
            let firstDelivered = try await eventually("the first five", every: .milliseconds(50)) {
                () -> [BuiltInPushDelivery]? in
                let inbox = try await listen.inbox(device: device, after: 0, epoch: nil, secret: secret)
                return Set(inbox.map(\.notificationId)).isSuperset(of: first) ? inbox : nil
            }
            try early.append(firstDelivered, hub: hub.state.url, categoryOf: { _ in "World" })
            oldEpoch = try #require(firstDelivered.first?.epoch)

            // The burst: three senders at once, each send noted once acknowledged (201), going
            // on until the backup is done.
            let acknowledged = Acknowledged()
            let burst = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for sender in 0..<3 {
                        group.addTask {
                            var i = 0
                            while !acknowledged.stopped.withLock({ $0 }), i < 2000 {
                                let id = try await Self.send(full, "burst \(sender)-\(i)")
                                acknowledged.ids.withLock { $0.append(id) }
                                i += 1
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            _ = try await eventually("the burst to be under way", every: .milliseconds(50)) {
                acknowledged.ids.withLock { $0.count >= 15 ? true : nil }
            }
            acknowledgedBeforeBackup = first.union(acknowledged.ids.withLock { $0 })
            let backedUp = try await user.run(["hub", "backup", backup.path, "--data", folder.path], timeout: 120)
            acknowledged.stopped.withLock { $0 = true }
            try await burst.value
            #expect(backedUp.status == 0, "\(backedUp.stderr)")
            #expect(backedUp.stdout.hasPrefix("backed up 1 installation, 0 registrations"), "\(backedUp.stdout)")
            #expect(backedUp.stdout.contains("push-service credentials are not in it"))
            let mode = try FileManager.default.attributesOfItem(atPath: backup.path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let everything = first.union(acknowledged.ids.withLock { $0 })
            let all = try await eventually("every send delivered", every: .milliseconds(50)) { () -> [BuiltInPushDelivery]? in
                let inbox = try await listen.inbox(device: device, after: 0, epoch: nil, secret: secret)
                return Set(inbox.map(\.notificationId)).isSuperset(of: everything) ? inbox : nil
            }
            try late.append(all, hub: hub.state.url, categoryOf: { _ in "World" })
        }

        let restoring = try await user.run(["hub", "restore", backup.path, "--data", restored.path])
        #expect(restoring.status == 0, "\(restoring.stderr)")
        #expect(restoring.stdout.hasPrefix("restored 1 installation"), "\(restoring.stdout)")
        let oldKeys = try Self.keys(in: folder)
        #expect(try Self.keys(in: restored).text == oldKeys.text, "the keys the apps ship still work")
        for name in ["hub.sqlite", LocalHubKeyFile.fileName] {
            let mode =
                try FileManager.default.attributesOfItem(atPath: restored.appendingPathComponent(name).path)[
                    .posixPermissions] as? Int
            #expect(mode == 0o600, "\(name)")
        }

        try await HubProcess.with(directory: restored) { hub throws in
            let listen = try Self.client(url: hub.state.url, rule: AuthorizationRule.listenRuleName, key: oldKeys.listen)
            let full = try Self.client(url: hub.state.url, rule: AuthorizationRule.fullRuleName, key: oldKeys.full)
            var after: Set<String> = []
            for i in 1...3 { after.insert(try await Self.send(full, "after \(i)")) }
            let expected = acknowledgedBeforeBackup.union(after)
            // Where the late receiver stood in the old log, before it reads the new one.
            let latePoint = try #require(late.resumePoint(hubName: "news"))
            for (name, log) in [("early", early), ("late", late)] {
                let point = try #require(log.resumePoint(hubName: "news"))
                #expect(point.epoch == oldEpoch)
                // Resumed as the receiver resumes: after its point, in its epoch.
                let resumed = try await eventually("the \(name) receiver's messages", every: .milliseconds(50)) {
                    () -> [BuiltInPushDelivery]? in
                    let batch = try await listen.inboxPages(
                        device: device, after: point.seq, epoch: point.epoch, secret: secret)
                    return Set(batch.deliveries.map(\.notificationId)).isSuperset(of: expected) ? batch.deliveries : nil
                }
                #expect(resumed.allSatisfy { $0.epoch != nil && $0.epoch != oldEpoch }, "a new delivery log epoch")
                // A point of the old log does not count in the new one: it is given everything.
                #expect(resumed.contains { $0.seq <= point.seq }, "\(name): replayed from the start")
                try log.append(resumed, hub: hub.state.url, categoryOf: { _ in "World" })
                let ids = log.entries.map(\.notificationId)
                #expect(ids.count == Set(ids).count, "\(name): each message once")
                #expect(Set(ids).isSuperset(of: expected), "\(name): every acknowledged message")
            }
            // The stream, the app's way of receiving, resumed from the old log's last point:
            // the same, from the start of the new log.
            let point = latePoint
            let streamed = try await Self.streamed(
                listen, device: device, secret: secret, after: point.seq, epoch: point.epoch
            ) {
                Set($0.map(\.notificationId)).isSuperset(of: expected)
            }
            let missing = expected.subtracting(streamed.map(\.notificationId))
            #expect(
                missing.isEmpty,
                "\(missing.count) of \(expected.count) missing from \(streamed.count) streamed: \(missing.sorted().prefix(5)); \(streamed.prefix(3).map { "\($0.seq) \($0.notificationId)" })"
            )
            #expect(streamed.first?.seq ?? .max <= point.seq, "replayed from the start")
            #expect(streamed.allSatisfy { $0.epoch != nil && $0.epoch != oldEpoch })
            // The restored hub itself delivered each message once (a send unfinished when
            // the backup was taken is dispatched at start, and only then).
            let own = try await listen.inbox(device: device, after: 0, epoch: nil, secret: secret)
            let keys = own.map { BuiltInPushDelivery.dedupeKey(notificationId: $0.notificationId, template: $0.template) }
            #expect(keys.count == Set(keys).count)
        }
    }

    /// What the commands refuse, with the exit status the manual gives, changing nothing.
    @Test func overwritesRunningHubsAndBrokenBackupsAreRefusedLeavingEverythingAsItWas() async throws {
        let user = Command.freshHome()
        let folder = TestHub.temporaryDirectory()
        let backup = TestHub.temporaryDirectory().appendingPathComponent("news.backup")
        let device = randomDevice()
        func snapshot(_ folder: URL) -> [String: Data] {
            var files: [String: Data] = [:]
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] where name != "hub.log" {
                files[name] = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path) ?? Data()
            }
            return files
        }
        func oneLine(_ result: Command.Result) -> Bool { result.stderrLines.count == 1 && result.stdout.isEmpty }
        try await HubProcess.with(directory: folder) { hub throws in
            let listen = try HubClient(connectionString: hub.listen)
            try await listen.createOrUpdateInstallation(newsInstallation("terminal", device: device, tags: ["World"]))
            #expect(try await user.run(["hub", "backup", backup.path, "--data", folder.path]).status == 0)
            let written = try Data(contentsOf: backup)
            let again = try await user.run(["hub", "backup", backup.path, "--data", folder.path])
            #expect(again.status == 1 && oneLine(again) && again.stderr.contains("exists; give --force"), "\(again.stderr)")
            #expect(try Data(contentsOf: backup) == written)
            let forced = try await user.run(["hub", "backup", backup.path, "--data", folder.path, "--force"])
            #expect(forced.status == 0, "\(forced.stderr)")
            // Not into the folder of a hub that runs, even with --force.
            let keysBefore = try Data(contentsOf: folder.appendingPathComponent(LocalHubKeyFile.fileName))
            let running = try await user.run(["hub", "restore", backup.path, "--data", folder.path, "--force"])
            #expect(running.status == 1 && oneLine(running), "\(running.stderr)")
            #expect(running.stderr.contains("a hub is running on \(folder.path)"), "\(running.stderr)")
            #expect(try Data(contentsOf: folder.appendingPathComponent(LocalHubKeyFile.fileName)) == keysBefore)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: folder.path).allSatisfy { !$0.hasSuffix(".tmp") })
            // The hub still serves what it had.
            #expect(try await listen.installation(id: "terminal").installationId == "terminal")
        }
        let stopped = snapshot(folder)
        let held = try await user.run(["hub", "restore", backup.path, "--data", folder.path])
        #expect(held.status == 1 && oneLine(held) && held.stderr.contains("holds a hub already"), "\(held.stderr)")
        #expect(snapshot(folder) == stopped)

        // A backup cut short, garbage, a database that is not a backup: exit 5, one line,
        // nothing in the folder changed, and no folder made where there was none.
        let whole = try Data(contentsOf: backup)
        let truncated = backup.deletingLastPathComponent().appendingPathComponent("truncated")
        try whole.prefix(whole.count / 2).write(to: truncated)
        let garbage = backup.deletingLastPathComponent().appendingPathComponent("garbage")
        try Data((0..<8192).map { _ in UInt8.random(in: 0...255) }).write(to: garbage)
        let fresh = TestHub.temporaryDirectory().appendingPathComponent("fresh")
        // Keys no hub may serve (garbage; the Listen key every app ships given every right),
        // and a FIFO, which a read would wait on for ever.
        let scratch = TestHub.temporaryDirectory()
        let widened = scratch.appendingPathComponent("widened.backup")
        var rules = try LocalHubKeyFile.read(folder.appendingPathComponent(LocalHubKeyFile.fileName))
        rules.hubs["news"] = rules.hubs["news"]?.map { rule in
            var rule = rule
            if rule.name == AuthorizationRule.listenRuleName { rule.rights = .full }
            return rule
        }
        let copyOfDatabase = scratch.appendingPathComponent("hub.sqlite")
        try FileManager.default.copyItem(at: folder.appendingPathComponent("hub.sqlite"), to: copyOfDatabase)
        _ = try await HubBackup.backUp(sqlite: copyOfDatabase, keys: LocalHubKeyFile.encode(rules), to: widened)
        let garbageKeys = scratch.appendingPathComponent("garbage-keys.backup")
        _ = try await HubBackup.backUp(sqlite: copyOfDatabase, keys: "{\"not\": \"keys\"}", to: garbageKeys)
        let fifo = scratch.appendingPathComponent("fifo.backup")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let cases: [(URL, String)] = [
            (truncated, "is not a whole hub backup"), (garbage, "is not a hub backup: it is not a SQLite database"),
            (folder.appendingPathComponent("hub.sqlite"), "it is a database in WAL mode"),
            (widened, "must grant Listen only"), (garbageKeys, "holds keys that are not a key file"),
            (fifo, "it is not a regular file"),
        ]
        for (file, reason) in cases {
            for target in [folder, fresh] {
                let refused = try await user.run(["hub", "restore", file.path, "--data", target.path, "--force"])
                #expect(refused.status == 5 && oneLine(refused), "\(refused.stderr)")
                #expect(refused.stderr.contains(reason), "\(refused.stderr)")
            }
            #expect(snapshot(folder) == stopped)
            #expect(!FileManager.default.fileExists(atPath: fresh.path))
        }

        // With --force the stopped hub is replaced, and its delivery log starts a new epoch.
        let oldEpoch = try await SQLiteHubStore(path: folder.appendingPathComponent("hub.sqlite").path).epoch()
        let replaced = try await user.run(["hub", "restore", backup.path, "--data", folder.path, "--force"])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        let newEpoch = try await SQLiteHubStore(path: folder.appendingPathComponent("hub.sqlite").path).epoch()
        #expect(!newEpoch.isEmpty && newEpoch != oldEpoch)
        try await HubProcess.with(directory: folder) { hub throws in
            #expect(try await HubClient(connectionString: hub.listen).installation(id: "terminal").tags == ["World"])
        }
    }
}

/// Sends acknowledged so far, by the burst's senders.
/// What a stream brought so far.
final class Received: Sendable {
    let deliveries = Mutex<[BuiltInPushDelivery]>([])
}

final class Acknowledged: Sendable {
    let ids = Mutex<[String]>([])
    /// Set once the backup is done: the senders stop.
    let stopped = Mutex(false)
}
