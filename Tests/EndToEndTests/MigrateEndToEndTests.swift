import Foundation
import HubTestSupport
import LocalHub
import LocalHubSupport
import NotificationHubs
import TestTiers
import Testing

/// Issue 31: `hub migrate` from a SQLite hub into PostgreSQL, served by a node to an
/// unchanged client, and back into SQLite, leaving the hub as it was.
@Suite(.tags(.live, .postgres), .fullSuiteOnly, .serialized) struct MigrateEndToEndTests {
    /// What a move must keep, as JSON text: installations, registrations, claims and
    /// scheduled sends, read from the stopped hub's database through the store.
    static func contents(of folder: URL) async throws -> String {
        let store = try SQLiteHubStore(path: folder.appendingPathComponent("hub.sqlite").path)
        let snapshot = try await store.load()
        let installations = snapshot.installations.sorted {
            ($0.hub, $0.installation.installationId) < ($1.hub, $1.installation.installationId)
        }
        .map { JSONValue.object([("hub", .string($0.hub)), ("installation", $0.installation.json)]) }
        let registrations = snapshot.registrations.sorted { ($0.hub, $0.id) < ($1.hub, $1.id) }.map {
            JSONValue.object([
                ("hub", .string($0.hub)), ("xml", .string($0.registration.descriptionXML)),
                ("created", .number(String($0.created.timeIntervalSince1970))),
                ("updated", .number(String($0.updated.timeIntervalSince1970))),
            ])
        }
        let claims = snapshot.claimedDevices.map { "\($0.hub)/\($0.device)" }.sorted()
        let scheduled = try await store.scheduledNotifications().sorted { $0.id < $1.id }.map { n in
            JSONValue.object([
                ("hub", .string(n.hub)), ("id", .string(n.id)), ("format", .string(n.format.rawValue)),
                ("tags", n.tagExpression.map(JSONValue.string) ?? .null), ("body", .string(n.body)),
                ("headers", .object(n.headers.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
                ("enqueued", .number(String(n.enqueued.timeIntervalSince1970))),
                ("scheduledFor", .number(String(n.scheduledFor?.timeIntervalSince1970 ?? 0))),
                ("state", .string(n.state.rawValue)),
            ])
        }
        return JSONValue.object([
            ("installations", .array(installations)), ("registrations", .array(registrations)),
            ("claims", .strings(claims)), ("scheduled", .array(scheduled)),
        ]).text
    }

    @Test func aHubMovedToPostgreSQLAndBackIsServedByANodeAndComesBackTheSame() async throws {
        let server = try await PostgresServer.shared()
        let database = try await server.createDatabase()
        let user = Command.freshHome()
        let folder = TestHub.temporaryDirectory()
        let device = randomDevice()
        var secret: String?
        var installed: Installation?
        var scheduledId = ""
        try await HubProcess.with(directory: folder) { hub throws in
            let listen = try HubClient(connectionString: hub.listen)
            let full = try HubClient(connectionString: hub.full)
            secret = try #require(try await listen.claimBuiltInPushDevice(device).secret)
            try await listen.createOrUpdateInstallation(
                newsInstallation("terminal", device: device, tags: ["World"]), claimSecret: secret)
            try await listen.createOrUpdateInstallation(
                newsInstallation("phone", device: randomDevice(), tags: ["Sports", "Science"], userId: "ann"))
            _ = try await listen.createOrUpdateRegistration(
                Registration(kind: .appleNative, deviceToken: randomDevice(), tags: ["Politics"]))
            let receipt = try await full.scheduleSend(
                .template(["messageParam": "tomorrow"]), tagExpression: "World", at: Date().addingTimeInterval(86_400))
            scheduledId = try #require(receipt.notificationId)
            _ = try await full.send(.template(["messageParam": "today"]), tagExpression: "World")
            installed = try await listen.installation(id: "terminal")
        }
        let before = try await Self.contents(of: folder)
        #expect(before.contains(scheduledId) && before.contains("Politics") && before.contains(device))
        let keys = try String(contentsOf: folder.appendingPathComponent(LocalHubKeyFile.fileName), encoding: .utf8)

        let moved = try await user.run(["hub", "migrate", "--to", database, "--data", folder.path], timeout: 120)
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(
            moved.stdout.hasPrefix(
                "copied 2 installations, 1 registration, 1 scheduled send (2 notifications, 1 claimed device)"),
            "\(moved.stdout)")
        let twice = try await user.run(["hub", "migrate", "--to", database, "--data", folder.path], timeout: 120)
        #expect(twice.status == 1 && twice.stderr.contains("holds a hub already"), "\(twice.stderr)")

        // A node on the database serves the moved hub to a client holding the old keys.
        let nodeFolder = TestHub.temporaryDirectory()
        try await HubProcess.with(directory: nodeFolder, arguments: ["--store", database, "--node", "n1"]) { node throws in
            #expect(try String(contentsOf: nodeFolder.appendingPathComponent(LocalHubKeyFile.fileName), encoding: .utf8) == keys)
            let old = try #require(LocalHubKeyFile.decode(Data(keys.utf8))?["news"])
            func client(_ rule: String) throws -> HubClient {
                try HubClient(
                    connectionString: ConnectionString(
                        parsing: LocalHubKeyFile.connectionString(
                            baseURL: node.state.url, hub: "news", rule: rule, key: try #require(old[rule]))))
            }
            let listen = try client(AuthorizationRule.listenRuleName)
            let full = try client(AuthorizationRule.fullRuleName)
            #expect(try await listen.installation(id: "terminal").json.text == installed?.json.text)
            let sent = try #require(
                try await full.send(.template(["messageParam": "on the node"]), tagExpression: "World").notificationId)
            let delivered = try await eventually("the node's delivery", every: .milliseconds(50)) { () -> BuiltInPushDelivery? in
                try await listen.inbox(device: device, after: 0, epoch: nil, secret: secret).first { $0.notificationId == sent }
            }
            #expect(delivered.alertText == "on the node")
            #expect(try await full.notificationDetails(id: scheduledId).state == .scheduled)
        }

        // And back: a new SQLite hub, the same as the first.
        let back = TestHub.temporaryDirectory().appendingPathComponent("back")
        let returned = try await user.run(
            ["hub", "migrate", "--store", database, "--to", back.appendingPathComponent("hub.sqlite").path], timeout: 120)
        #expect(returned.status == 0, "\(returned.stderr)")
        #expect(try String(contentsOf: back.appendingPathComponent(LocalHubKeyFile.fileName), encoding: .utf8) == keys)
        #expect(try await Self.contents(of: back) == before)
        let epochs = [
            try await SQLiteHubStore(path: folder.appendingPathComponent("hub.sqlite").path).epoch(),
            try await SQLiteHubStore(path: back.appendingPathComponent("hub.sqlite").path).epoch(),
        ]
        #expect(epochs[0] != epochs[1], "the way back starts a new delivery log epoch")
        let again = try await user.run(
            ["hub", "migrate", "--store", database, "--to", back.appendingPathComponent("hub.sqlite").path], timeout: 120)
        #expect(again.status == 1 && again.stderr.contains("exists; give --force"), "\(again.stderr)")
        try await HubProcess.with(directory: back) { hub throws in
            #expect(
                try await HubClient(connectionString: hub.listen).installation(id: "terminal").json.text == installed?.json.text)
        }
    }

    /// A backup of a PostgreSQL database its node serves, taken while it serves, restored
    /// into another database and into a data folder: both serve the hub to the old keys, with
    /// a new epoch.
    @Test func aBackupOfPostgreSQLRestoresIntoAnotherDatabaseAndIntoAFolder() async throws {
        let server = try await PostgresServer.shared()
        let (first, second) = (try await server.createDatabase(), try await server.createDatabase())
        let user = Command.freshHome()
        let backup = TestHub.temporaryDirectory().appendingPathComponent("cluster.backup")
        let device = randomDevice()
        var secret: String?
        let nodeFolder = TestHub.temporaryDirectory()
        var sent: [String] = []
        var oldEpoch: String?
        try await HubProcess.with(directory: nodeFolder, arguments: ["--store", first, "--node", "n1"]) { node throws in
            let listen = try HubClient(connectionString: node.listen)
            let full = try HubClient(connectionString: node.full)
            secret = try #require(try await listen.claimBuiltInPushDevice(device).secret)
            try await listen.createOrUpdateInstallation(
                newsInstallation("terminal", device: device, tags: ["World"]), claimSecret: secret)
            for i in 1...3 {
                sent.append(
                    try #require(try await full.send(.template(["messageParam": "n\(i)"]), tagExpression: "World").notificationId)
                )
            }
            let delivered = try await eventually("the node's deliveries", every: .milliseconds(50)) {
                () -> [BuiltInPushDelivery]? in
                let inbox = try await listen.inbox(device: device, after: 0, epoch: nil, secret: secret)
                return inbox.count >= 3 ? inbox : nil
            }
            oldEpoch = delivered.first?.epoch
            let backedUp = try await user.run(["hub", "backup", backup.path, "--store", first], timeout: 120)
            #expect(backedUp.status == 0, "\(backedUp.stderr)")
            #expect(
                backedUp.stdout.hasPrefix("backed up 1 installation, 0 registrations, 0 scheduled sends, 3 deliveries"),
                "\(backedUp.stdout)")
        }
        let keys = try String(contentsOf: nodeFolder.appendingPathComponent(LocalHubKeyFile.fileName), encoding: .utf8)

        let intoDatabase = try await user.run(["hub", "restore", backup.path, "--store", second], timeout: 120)
        #expect(intoDatabase.status == 0, "\(intoDatabase.stderr)")
        let folder = TestHub.temporaryDirectory().appendingPathComponent("restored")
        let intoFolder = try await user.run(["hub", "restore", backup.path, "--data", folder.path])
        #expect(intoFolder.status == 0, "\(intoFolder.stderr)")
        let places: [(URL, [String])] = [
            (TestHub.temporaryDirectory(), ["--store", second, "--node", "n2"]), (folder, []),
        ]
        for (directory, arguments) in places {
            try await HubProcess.with(directory: directory, arguments: arguments) { hub throws in
                #expect(
                    try String(contentsOf: directory.appendingPathComponent(LocalHubKeyFile.fileName), encoding: .utf8) == keys)
                let listen = try HubClient(connectionString: hub.listen)
                #expect(try await listen.installation(id: "terminal").tags == ["World"])
                // Resuming from the old log's last point: everything again, in a new epoch.
                let inbox = try await listen.inbox(device: device, after: 3, epoch: oldEpoch, secret: secret)
                #expect(inbox.map(\.notificationId) == sent, "\(arguments)")
                #expect(inbox.allSatisfy { $0.epoch != nil && $0.epoch != oldEpoch })
            }
        }
    }
}
