import Foundation
import GRDB
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// No stored value can stop the hub: rows of the wrong kind are set aside, numbers at the end
/// of their range end sends as `Abandoned` with the reason, and a send whose dispatch was
/// begun at three starts is not begun again.
@Suite struct StoredValueTests {
    /// A hub folder whose database a first start made, the hub stopped again: ready to be
    /// doctored as someone with the file would.
    static func stoppedHubFolder() async throws -> URL {
        let directory = TestHub.temporaryDirectory()
        try await HubProcess.with(directory: directory) { hub in
            try await HubClient(connectionString: hub.listen, retryPolicy: .none).createOrUpdateInstallation(
                newsInstallation("kept", device: randomDevice(), tags: ["World"]))
        }
        return directory
    }

    /// Two sends to World, each ended `Abandoned` with the reason (numbers past 2^62) in explain.
    static func expectSendsAbandoned(by full: HubClient) async throws {
        for text in ["first", "second"] {
            let id = try #require(try await full.send(.template(["messageParam": text]), tagExpression: "World").notificationId)
            let details = try await eventually("the send to be abandoned") { () async throws -> NotificationDetails? in
                let details = try await full.notificationDetails(id: id)
                return details.state == .abandoned ? details : nil
            }
            #expect(details.endTime != nil)
            let explained = try await full.explain(id: id)
            #expect(explained.findings.first?.contains("2^62") == true, "\(explained.findings)")
        }
    }

    static func doctor(_ directory: URL, _ sql: String) throws {
        let database = try DatabaseQueue(path: directory.appendingPathComponent("hub.sqlite").path)
        try database.write { db in try db.execute(sql: sql) }
        try database.close()
    }

    @Test(.tags(.live), .fullSuiteOnly) func rowsOfTheWrongKindAreSetAsideAndTheHubStartsAndServes() async throws {
        let directory = try await Self.stoppedHubFolder()
        // An unfinished send whose hub is bytes that are no text and whose time is a word, a
        // registration whose times are words, a claim whose time is a word.
        try Self.doctor(
            directory,
            """
            INSERT INTO notification (hub, id, format, tags, body, headers, test, enqueued, state, outcome)
                VALUES (X'FF00FE', 'n-blob', 'template', 'World', '{"messageParam":"x"}', '{}', 0, 'yesterday', 'Enqueued', '{}');
            INSERT INTO notification (hub, id, format, tags, body, headers, test, enqueued, state, outcome)
                VALUES ('news', 'n-time', 'template', 'World', '{"messageParam":"x"}', '{}', 0, 'soon', 'Scheduled', '{}');
            INSERT INTO registration (hub, id, xml, created, updated) VALUES ('news', 'r-1', '<entry/>', 'then', 'now');
            INSERT INTO sandbox_device (hub, device, claimed) VALUES ('news', '\(String(repeating: "ab", count: 32))', 'once');
            """)
        try await HubProcess.with(directory: directory) { hub in
            let client = try HubClient(connectionString: hub.full, retryPolicy: .none)
            #expect(try await raw(.GET, hub.state.url + "/healthz").status == 200)
            // It serves: the installation kept, a new send delivered.
            #expect(try await client.installation(id: "kept").installationId == "kept")
            let device = randomDevice()
            try await HubClient(connectionString: hub.listen, retryPolicy: .none).createOrUpdateInstallation(
                newsInstallation("new", device: device, tags: ["World"]))
            _ = try await client.send(.template(["messageParam": "after"]), tagExpression: "World")
            let token = SharedAccessSignature.make(
                resource: hub.listen.hubURL("news"), keyName: hub.listen.keyName, key: hub.listen.key)
            let got = try await readStream(baseURL: hub.state.url, hub: "news", device: device, token: token, count: 1)
            #expect(got.compactMap(\.alertText) == ["after"])
        }
        let database = try DatabaseQueue(path: directory.appendingPathComponent("hub.sqlite").path)
        let aside = try await database.read { db in
            try String.fetchAll(db, sql: "SELECT kind || ':' || CAST(id AS TEXT) FROM quarantine ORDER BY seq")
        }
        try database.close()
        #expect(Set(aside) == ["notification:n-blob", "notification:n-time", "registration:r-1"], "\(aside)")
    }

    /// The log's numbers at the end of Int64 (written by hand): retention, which runs at start,
    /// held them to their range instead of overflowing, and the hub serves.
    @Test(.tags(.live), .fullSuiteOnly) func numbersAtTheEndOfInt64InTheLogDoNotStopRetention() async throws {
        for (doctoring, arguments) in [
            (
                "UPDATE delivery SET seq = 9223372036854775807; UPDATE payload SET delivered = 946684800, last_seq = 9223372036854775807",
                [String]()
            ),
            (
                "UPDATE payload SET last_seq = 9223372036854775807, body = '\"' || hex(randomblob(700000)) || '\"'",
                ["--delivery-log-megabytes", "1"]
            ),
            (
                "UPDATE delivery SET seq = -9223372036854775808; UPDATE payload SET body = '\"' || hex(randomblob(700000)) || '\"'",
                ["--delivery-log-megabytes", "1"]
            ),
        ] {
            let directory = TestHub.temporaryDirectory()
            try await HubProcess.with(directory: directory) { hub in
                let device = randomDevice()
                try await HubClient(connectionString: hub.listen, retryPolicy: .none).createOrUpdateInstallation(
                    newsInstallation("d", device: device, tags: ["World"]))
                _ = try await HubClient(connectionString: hub.full, retryPolicy: .none).send(
                    .template(["messageParam": "one"]), tagExpression: "World")
                let token = SharedAccessSignature.make(
                    resource: hub.listen.hubURL("news"), keyName: hub.listen.keyName, key: hub.listen.key)
                _ = try await readStream(baseURL: hub.state.url, hub: "news", device: device, token: token, count: 1)
            }
            try Self.doctor(directory, doctoring)
            try await HubProcess.with(directory: directory, arguments: arguments) { hub in
                // Retention's first pass comes within moments of the start.
                try await Task.sleep(for: .seconds(2))
                #expect(hub.process.isRunning, "\(doctoring)")
                #expect(try await raw(.GET, hub.state.url + "/healthz").status == 200)
            }
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func numbersAtTheEndOfTheirRangeAbandonSendsAndTheHubServesOn() async throws {
        let directory = try await Self.stoppedHubFolder()
        try Self.doctor(directory, "UPDATE delivery_counter SET seq_reserved = 9223372036854775000")
        try await HubProcess.with(directory: directory) { hub in
            let full = try HubClient(connectionString: hub.full, retryPolicy: .none)
            try await HubClient(connectionString: hub.listen, retryPolicy: .none).createOrUpdateInstallation(
                newsInstallation("w", device: randomDevice(), tags: ["World"]))
            try await Self.expectSendsAbandoned(by: full)
            #expect(hub.process.isRunning)
            #expect(try await raw(.GET, hub.state.url + "/healthz").status == 200)
            #expect(try await full.installation(id: "w").installationId == "w")
        }
    }

    /// Notifications a start finds unfinished, each begun at some starts before: the one at
    /// three is abandoned with the reason, the one at two is dispatched (its fourth start
    /// counted first, durably).
    @Test func aSendBegunAtThreeStartsIsAbandonedNotBegunAgain() async throws {
        let path = TestHub.temporaryDirectory().appendingPathComponent("hub.sqlite").path
        let store = try SQLiteHubStore(path: path)
        let device = randomDevice()
        var worn = StoredNotification(
            hub: "news", id: "worn", format: .template, tagExpression: "World", body: #"{"messageParam":"worn"}"#)
        worn.dispatchStarts = 3
        var fresh = worn
        fresh.id = "fresh"
        fresh.dispatchStarts = 2
        try await store.apply([
            .upsertInstallation(
                hub: "news", try newsInstallation("d", device: device, tags: ["World"]).validatedForStorage(lastUpdate: "")),
            .insertNotification(worn), .insertNotification(fresh),
        ])
        let engine = HubEngine(store: store, configuration: .init(hubs: ["news"]), logger: TestHub.quietLogger)
        let service = EngineService(engine: engine)
        try await withService(service) {
            try await service.waitUntilStarted()
            let ended = try await eventually("both notifications to end") { () async throws -> [StoredNotification]? in
                let both = [
                    try await store.notification(hub: "news", id: "worn"), try await store.notification(hub: "news", id: "fresh"),
                ]
                return both.allSatisfy { $0?.ended != nil } ? both.compactMap { $0 } : nil
            }
            #expect(ended.map(\.state) == [.abandoned, .completed])
            #expect(ended[0].report.first?.text.contains("3 starts") == true, "\(ended[0].report)")
            #expect(ended.map(\.dispatchStarts) == [4, 3], "each start was counted before anything was dispatched")
            let delivered = try await store.deliveries(hub: "news", device: device, after: 0, limit: 10)
            #expect(delivered.map(\.notificationId) == ["fresh"])
            let explained = try #require(try await engine.explain(hub: "news", id: "worn"))
            #expect(explained.findings == ["It was abandoned: \(ended[0].report[0].text). Nothing more is sent of it."])
        }
    }

    /// On PostgreSQL too, a notification row no node could have written is moved to the
    /// quarantine when a node would dispatch it (it was skipped at every claim, for ever).
    @Test(.tags(.live, .postgres), .fullSuiteOnly) func onPostgresANotificationRowOfTheWrongKindIsQuarantined() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let node = try await PostgresHubStore.started(url: url, node: "n1", logger: TestHub.quietLogger)
        defer { node.shutdown() }
        try await node.apply([.insertNotification(HubStoreConformanceTests.notification("good"))])
        _ = try await PostgresServer.shared().psql(
            """
            INSERT INTO notification (hub, id, format, body, headers, test, enqueued, state, outcome, lease_until)
            VALUES ('news', 'odd-format', 'telegram', '{}', '{}', false, 1.8e9, 'Enqueued', '{}', 0),
                ('news', 'odd-time', 'template', '{}', '{}', false, -5, 'Enqueued', '{}', 0);
            """, database: url)
        // The two odd rows' claims lapsed (they have none); the good one is this node's own.
        let claimed = try await node.claimNotifications(now: Date().addingTimeInterval(60), limit: 10)
        #expect(claimed.isEmpty, "\(claimed.map(\.id))")
        let aside = try await PostgresServer.shared().psql(
            "SELECT string_agg(convert_from(id, 'UTF8'), ',' ORDER BY seq) FROM quarantine WHERE kind = 'notification'",
            database: url)
        #expect(aside.trimmingCharacters(in: .whitespacesAndNewlines) == "odd-format,odd-time")
        #expect(try await node.unfinishedNotifications().map(\.id) == ["good"])
    }

    /// On PostgreSQL, a mark at the end of the range ends each send `Abandoned` (earlier, the
    /// dispatch was retried for ever and every later send stayed `Enqueued`).
    @Test(.tags(.live, .postgres), .fullSuiteOnly) func onPostgresASendPastTheRangeIsAbandonedNotLeftEnqueued() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let beside = try await PostgresHubStore.started(url: url, logger: TestHub.quietLogger)
        defer { beside.shutdown() }
        try await TestHub.with(configure: { $0.storeURL = url }) { hub in
            try await hub.client(hub.listen).createOrUpdateInstallation(
                newsInstallation("w", device: randomDevice(), tags: ["World"]))
            _ = try await beside.written(
                "UPDATE delivery_counter SET delivery_high = 9223372036854775000 RETURNING one")
            let full = try hub.client(hub.full)
            try await Self.expectSendsAbandoned(by: full)
        }
    }
}
