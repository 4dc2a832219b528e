import Foundation
import GRDB
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// Backups and moves between stores (issue 31), on the stores themselves: what a backup
/// holds, what a restore and a move keep, and the new epoch each starts.
struct BackupTests {
    static let hub = "news"
    /// A key file's text, as a hub writes it: what a restore checks and writes back.
    static let keys = LocalHubKeyFile.encode(
        LocalHubKeyFile.Contents(generation: 3, hubs: [hub: HubKeys.defaultRules()]))

    /// A hub database with a little of everything: an installation, a registration, a claim,
    /// a scheduled, an unfinished and a finished send with its deliveries to two devices, a gap.
    static func populated(at path: String) async throws -> (store: SQLiteHubStore, devices: [String]) {
        let store = try SQLiteHubStore(path: path)
        let devices = [randomDevice().lowercased(), randomDevice().lowercased()]
        var scheduled = StoredNotification(
            hub: hub, id: "scheduled", format: .template, tagExpression: "World", body: #"{"messageParam":"later"}"#,
            enqueued: Date(timeIntervalSince1970: 1_700_000_000))
        scheduled.state = .scheduled
        scheduled.scheduledFor = Date(timeIntervalSince1970: 1_900_000_000)
        let unfinished = StoredNotification(
            hub: hub, id: "unfinished", format: .template, tagExpression: "World", body: #"{"messageParam":"soon"}"#,
            enqueued: Date(timeIntervalSince1970: 1_700_000_010))
        var finished = StoredNotification(
            hub: hub, id: "finished", format: .template, tagExpression: "World", body: #"{"messageParam":"hi"}"#,
            headers: ["apns-priority": "10"], enqueued: Date(timeIntervalSince1970: 1_700_000_020))
        var registration = Registration(kind: .appleNative, deviceToken: randomDevice(), tags: ["Politics"])
        registration.registrationId = "reg-1"
        registration.etag = "1"
        registration.expirationTime = W3CDate.never
        try await store.apply([
            .upsertInstallation(hub: hub, newsInstallation("terminal", device: devices[0], tags: ["World"])),
            .upsertRegistration(
                StoredRegistration(
                    hub: hub, registration: registration,
                    created: Date(timeIntervalSince1970: 1_700_000_001), updated: Date(timeIntervalSince1970: 1_700_000_002))),
            .claimDevice(hub: hub, device: devices[0], at: Date(timeIntervalSince1970: 1_700_000_003)),
            .insertNotification(scheduled), .insertNotification(unfinished), .insertNotification(finished),
        ])
        finished.state = .completed
        finished.started = Date(timeIntervalSince1970: 1_700_000_021)
        finished.ended = Date(timeIntervalSince1970: 1_700_000_022)
        finished.outcomeCounts = ["Success": 2]
        let deliveries = devices.enumerated().map { index, device in
            Delivery(
                seq: Int64(index + 1), hub: hub, device: device, notificationId: "finished", template: "simpleAPNSTemplate",
                payload: #"{"aps":{"alert":"hi"}}"#, delivered: Date(timeIntervalSince1970: 1_700_000_022), tags: "World")
        }
        _ = try await store.record([DispatchRecord(notification: finished, deliveries: deliveries)])
        try await store.importGaps([(hub, devices[1], DeliveryGap(from: 1, through: 1, count: 1))])
        return (store, devices)
    }

    /// Everything a copy must keep, as text, to compare in one expectation; the delivery log
    /// and its gaps only when `deliveries`.
    static func contents(_ store: some HubStore, devices: [String], deliveries: Bool = true) async throws -> String {
        let snapshot = try await store.load()
        var lines = snapshot.installations.map { "installation \($0.hub) \($0.installation.json.text)" }
        lines += snapshot.registrations.map {
            "registration \($0.hub) \($0.registration.descriptionXML) \($0.created.timeIntervalSince1970) "
                + "\($0.updated.timeIntervalSince1970)"
        }
        lines += snapshot.claimedDevices.map { "claim \($0.hub) \($0.device)" }
        // The claim's time too: claimed at 1_700_000_003.
        lines += try await store.staleClaims(before: Date(timeIntervalSince1970: 1_700_000_004), limit: 10).map {
            "claimed by then \($0.device)"
        }
        for id in ["scheduled", "unfinished", "finished"] {
            lines.append("notification \(String(describing: try await store.notification(hub: hub, id: id)))")
        }
        lines.append("unfinished \(try await store.unfinishedNotifications().map(\.id))")
        lines.append("scheduled \(try await store.scheduledNotifications().map(\.id))")
        if deliveries {
            for device in devices {
                lines.append("deliveries \(try await store.deliveries(hub: hub, device: device, after: 0, limit: 10))")
                lines.append("gap \(String(describing: try await store.gap(hub: hub, device: device)))")
            }
        }
        return lines.joined(separator: "\n")
    }

    @Test func aBackupRestoredOrMovedKeepsEverythingAndStartsANewEpoch() async throws {
        let folder = TestHub.temporaryDirectory()
        let (store, devices) = try await Self.populated(at: folder.appendingPathComponent("hub.sqlite").path)
        let original = try await Self.contents(store, devices: devices)
        let epoch = try await store.epoch()
        #expect(original.contains("claimed by then") && original.contains("gap Optional"))

        let backup = folder.appendingPathComponent("news.backup")
        let (info, counts) = try await HubBackup.backUp(
            sqlite: folder.appendingPathComponent("hub.sqlite"), keys: Self.keys, to: backup)
        #expect(info.keys == Self.keys && info.sourceEpoch == epoch && info.highestSequence == 2 && info.source == "sqlite")
        #expect(info.format == HubBackupInfo.currentFormat)
        #expect(
            counts.installations == 1 && counts.registrations == 1 && counts.claims == 1 && counts.scheduled == 1
                && counts.notifications == 3 && counts.deliveries == 2)
        #expect(try FileManager.default.attributesOfItem(atPath: backup.path)[.posixPermissions] as? Int == 0o600)
        #expect(try HubBackup.open(backup).0 == info)

        // Restored into a folder: the same hub, its keys as they were, a new epoch.
        let restoredFolder = TestHub.temporaryDirectory()
        _ = try await HubBackup.restore(backup, into: restoredFolder)
        let restored = try SQLiteHubStore(path: restoredFolder.appendingPathComponent("hub.sqlite").path)
        #expect(try await Self.contents(restored, devices: devices) == original)
        #expect(try await restored.epoch() != epoch)
        #expect(try String(contentsOf: restoredFolder.appendingPathComponent("keys.json"), encoding: .utf8) == Self.keys)
        #expect(try await restored.pool.read { try $0.tableExists("backup_info") } == false)

        // Moved into a new SQLite file through the store's writes, with the delivery log.
        let moved = TestHub.temporaryDirectory().appendingPathComponent("moved/hub.sqlite")
        let (_, copied) = try await HubTransfer.copy(backup: backup, to: .sqlite(moved), deliveries: true, replacing: false)
        #expect(
            copied.installations == 1 && copied.registrations == 1 && copied.claims == 1 && copied.scheduled == 1
                && copied.notifications == 3 && copied.deliveries == 2 && copied.skipped == 0)
        let movedStore = try SQLiteHubStore(path: moved.path)
        #expect(try await Self.contents(movedStore, devices: devices) == original)
        #expect(try await movedStore.epoch() != epoch)
        let besides = moved.deletingLastPathComponent().appendingPathComponent("keys.json")
        #expect(try String(contentsOf: besides, encoding: .utf8) == Self.keys)

        // Without --deliveries, the log stays behind.
        let bare = TestHub.temporaryDirectory().appendingPathComponent("bare/hub.sqlite")
        let (_, withoutLog) = try await HubTransfer.copy(
            backup: backup, to: .sqlite(bare), deliveries: false, replacing: false)
        #expect(withoutLog.deliveries == 0)
        let bareStore = try SQLiteHubStore(path: bare.path)
        #expect(
            try await Self.contents(bareStore, devices: devices, deliveries: false)
                == Self.contents(store, devices: devices, deliveries: false))
        #expect(try await bareStore.deliveries(hub: Self.hub, device: devices[0], after: 0, limit: 10).isEmpty)
    }

    /// Into PostgreSQL and out again through a backup of the database: the same hub, the
    /// delivery log and its gaps included.
    @Test(.tags(.live, .postgres), .fullSuiteOnly) func aHubMovedIntoPostgreSQLIsBackedUpFromItTheSame() async throws {
        let server = try await PostgresServer.shared()
        let url = try await server.createDatabase()
        let folder = TestHub.temporaryDirectory()
        let (store, devices) = try await Self.populated(at: folder.appendingPathComponent("hub.sqlite").path)
        let original = try await Self.contents(store, devices: devices)
        let backup = folder.appendingPathComponent("news.backup")
        _ = try await HubBackup.backUp(sqlite: folder.appendingPathComponent("hub.sqlite"), keys: Self.keys, to: backup)

        let postgres = try await PostgresHubStore.started(url: url, node: "mover", logger: TestHub.quietLogger)
        defer { postgres.shutdown() }
        let fresh = try await postgres.epoch()
        _ = try await HubTransfer.copy(backup: backup, to: .postgres(postgres), deliveries: true, replacing: false)
        #expect(try await Self.contents(postgres, devices: devices) == original)
        // A database that holds a hub is refused, and replaced with --force (a new epoch).
        await #expect(throws: HubTransferRefusal.self) {
            _ = try await HubTransfer.copy(backup: backup, to: .postgres(postgres), deliveries: true, replacing: false)
        }
        _ = try await HubTransfer.copy(backup: backup, to: .postgres(postgres), deliveries: true, replacing: true)
        #expect(try await Self.contents(postgres, devices: devices) == original)
        let replaced = try await postgres.epoch()
        #expect(replaced != fresh)

        // Backed up from the database: the same file's contents, its keys those it keeps.
        let again = folder.appendingPathComponent("from-postgres.backup")
        let (info, counts) = try await HubBackup.backUp(postgres: postgres, to: again)
        #expect(info.keys == Self.keys && info.sourceEpoch == replaced && info.source == "postgres")
        #expect(counts.deliveries == 2 && counts.notifications == 3 && counts.skipped == 0)
        let restoredFolder = TestHub.temporaryDirectory()
        _ = try await HubBackup.restore(again, into: restoredFolder)
        let restored = try SQLiteHubStore(path: restoredFolder.appendingPathComponent("hub.sqlite").path)
        #expect(try await Self.contents(restored, devices: devices) == original)
    }
}

/// A restore trusts nothing of the file but its data (issue 44): no trigger, view, index or
/// table of the file's survives, keys are checked where they enter, and only a regular file
/// is read.
struct HostileBackupTests {
    /// A backup of a populated hub, then doctored as someone who can write the file would.
    static func doctoredBackup(_ sql: String, keys: String = BackupTests.keys) async throws -> (URL, [String]) {
        let folder = TestHub.temporaryDirectory()
        let (_, devices) = try await BackupTests.populated(at: folder.appendingPathComponent("hub.sqlite").path)
        let backup = folder.appendingPathComponent("news.backup")
        _ = try await HubBackup.backUp(sqlite: folder.appendingPathComponent("hub.sqlite"), keys: keys, to: backup)
        let queue = try DatabaseQueue(path: backup.path)
        try await queue.write { db in try db.execute(sql: sql) }
        try queue.close()
        return (backup, devices)
    }

    /// Every schema object a database holds, as SQLite keeps them.
    static func schema(_ path: String) async throws -> Set<String> {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return Set(
            try await queue.read { db in
                try String.fetchAll(
                    db,
                    sql:
                        "SELECT type || ' ' || name || ' ' || COALESCE(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
                )
            })
    }

    @Test func aRestoreRebuildsTheHubAndKeepsNothingOfTheFilesSchema() async throws {
        let attacker = String(repeating: "ee", count: 32)
        // Every delivery the restored hub wrote would be copied to the attacker's token, which
        // the Listen key reads; a view, an index and a table of the author's own beside.
        let (backup, devices) = try await Self.doctoredBackup(
            """
            INSERT INTO device_ref (hub, device) VALUES ('news', '\(attacker)');
            CREATE TRIGGER spy AFTER INSERT ON delivery BEGIN
                INSERT INTO delivery (seq, device, payload)
                VALUES (NEW.seq + 1000000, (SELECT id FROM device_ref WHERE device = '\(attacker)'), NEW.payload);
            END;
            CREATE VIEW everything AS SELECT * FROM installation;
            CREATE INDEX by_json ON installation (json);
            CREATE TABLE extra (secret TEXT);
            """)
        for restoring in [false, true] {
            let folder = TestHub.temporaryDirectory()
            let database = folder.appendingPathComponent("hub.sqlite")
            if restoring {
                _ = try await HubBackup.restore(backup, into: folder)
            } else {
                _ = try await HubTransfer.copy(backup: backup, to: .sqlite(database), deliveries: true, replacing: false)
            }
            let fresh = TestHub.temporaryDirectory().appendingPathComponent("fresh.sqlite")
            try SQLiteHubStore(path: fresh.path).close()
            #expect(try await Self.schema(database.path) == Self.schema(fresh.path), "only this version's schema")
            let store = try SQLiteHubStore(path: database.path)
            var n = StoredNotification(hub: "news", id: "after", format: .template, tagExpression: "World", body: "{}")
            try await store.apply([.insertNotification(n)])
            n.state = .completed
            let next = try await store.sequenceHighWater() + 1
            _ = try await store.record([
                DispatchRecord(
                    notification: n,
                    deliveries: [
                        Delivery(
                            seq: next, hub: "news", device: devices[0], notificationId: "after", template: "t",
                            payload: #"{"aps":{"alert":"after"}}"#, delivered: Date(), tags: "World")
                    ])
            ])
            #expect(try await store.deliveries(hub: "news", device: attacker, after: 0, limit: 10).isEmpty)
            #expect(try await store.deliveries(hub: "news", device: devices[0], after: 0, limit: 10).count == 2)
            try store.close()
        }
    }

    /// Keys no hub may serve: refused with the reason, and the folder, holding a hub, is left
    /// exactly as it was.
    @Test(arguments: [
        ("not a key file at all", "holds keys that are not a key file"),
        (
            LocalHubKeyFile.encode(
                LocalHubKeyFile.Contents(
                    hubs: [
                        "news": HubKeys.defaultRules().map { rule in
                            var rule = rule
                            if rule.name == AuthorizationRule.listenRuleName { rule.rights = .full }
                            return rule
                        }
                    ])), "must grant Listen only"
        ),
        (
            LocalHubKeyFile.encode(
                LocalHubKeyFile.Contents(
                    hubs: ["news": [AuthorizationRule(name: "short", primaryKey: "abc", secondaryKey: "abc", rights: .send)]])),
            "shorter than the 32 a key must have"
        ),
    ])
    func aBackupWhoseKeysNoHubMayServeIsRefusedChangingNothing(keys: String, reason: String) async throws {
        let (backup, _) = try await Self.doctoredBackup("SELECT 1", keys: keys)
        let folder = TestHub.temporaryDirectory()
        _ = try await BackupTests.populated(at: folder.appendingPathComponent("hub.sqlite").path)
        try Data(BackupTests.keys.utf8).write(to: folder.appendingPathComponent(LocalHubKeyFile.fileName))
        func files() throws -> [String: Data] {
            var files: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
                files[name] = try Data(contentsOf: folder.appendingPathComponent(name))
            }
            return files
        }
        let before = try files()
        for attempt in 0..<2 {
            do {
                if attempt == 0 { _ = try HubBackup.open(backup) } else { _ = try await HubBackup.restore(backup, into: folder) }
                Issue.record("keys '\(keys.prefix(40))' were taken")
            } catch let error as HubBackupError {
                #expect(error.description.contains(reason), "\(error)")
            }
        }
        #expect(try files() == before)
    }

    /// A backup whose numbers reach the end of their range (written by hand) restores into a
    /// hub that can send: its log is numbered afresh in its new epoch, the deliveries numbered
    /// that high left out.
    @Test func aBackupNumberedAtTheEndOfTheRangeRestoresIntoAHubThatSends() async throws {
        let (backup, _) = try await Self.doctoredBackup(
            """
            UPDATE backup_info SET highest_seq = \((Int64(1) << 62) - 1);
            UPDATE device_ref SET gap_through = \((Int64(1) << 62) - 1) WHERE gap_through IS NOT NULL;
            """)
        let folder = TestHub.temporaryDirectory()
        _ = try await HubBackup.restore(backup, into: folder)
        let store = try SQLiteHubStore(path: folder.appendingPathComponent("hub.sqlite").path)
        let high = try await store.sequenceHighWater()
        #expect(high < StoredRange.restoreHeadroom, "\(high)")
        try store.close()
    }

    /// A FIFO named as the backup is refused at once; reading it would wait for a writer for
    /// ever.
    @Test func onlyARegularFileIsRead() async throws {
        let fifo = TestHub.temporaryDirectory().appendingPathComponent("news.backup")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let outcome = try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask {
                do {
                    _ = try HubBackup.open(fifo)
                    return "opened"
                } catch {
                    return "\(error)"
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(20))
                // Unblocks a reader waiting for a writer, so that the test ends either way.
                let writer = open(fifo.path, O_WRONLY | O_NONBLOCK)
                if writer >= 0 { close(writer) }
                return "waited"
            }
            let first = try await group.next()!
            group.cancelAll()
            return first
        }
        #expect(outcome.contains("is not a regular file"), "\(outcome)")
    }
}
