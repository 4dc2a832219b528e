import Foundation
import GRDB
import HubTestSupport
import LocalHub
import LocalHubSupport
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

/// Issue 10: what anyone holding the app's Listen key (or running on the same machine) could
/// do to the hub. Every request gets a clear 4xx or its connection closed, the hub stays up
/// and healthy, and what it stored still loads.
@Suite struct HostileRequestTests {
    func get(_ hub: TestHub, _ path: String, token: String? = nil) async throws -> RawResponse {
        try await raw(.GET, hub.baseURL + path, headers: [("Authorization", token ?? hub.token(hub.listen))])
    }

    func expectHealthy(_ hub: TestHub) async throws {
        #expect(try await raw(.GET, hub.baseURL + "/healthz").status == 200)
    }

    /// Waits until `/healthz` answers: under a flood, a request may wait its turn or be cut
    /// while the hub sheds idle connections.
    func waitHealthy(_ hub: TestHub) async throws {
        try await eventually("the hub to answer /healthz", every: .milliseconds(200)) {
            (try? await raw(.GET, hub.baseURL + "/healthz").status) == 200
        }
    }

    static let templateEntry = """
        <entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">\
        <AppleTemplateRegistrationDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">\
        <Tags>World</Tags><DeviceToken>AB12</DeviceToken><BodyTemplate><![CDATA[{"aps":{"alert":"$(m)"}}]]></BodyTemplate>\
        FIELDS</AppleTemplateRegistrationDescription></content></entry>
        """

    @Test(
        .tags(.live), .fullSuiteOnly,
        arguments: [
            ("<Priority>1&#0;0</Priority>", "Priority"),
            ("<Expiry>2030&#0;</Expiry>", "Expiry"),
            ("<TemplateName>t&#0;x</TemplateName>", "TemplateName"),
            ("<TemplateName>t&#x1B;[2Jx</TemplateName>", "TemplateName"),
            ("<ApnsHeaders><ApnsHeader><Header>apns-id</Header><Value>a&#0;b</Value></ApnsHeader></ApnsHeaders>", "Value"),
            ("<TemplateName>t\u{1}x</TemplateName>", "TemplateName"),
            ("<TemplateName>t&#x9B;x</TemplateName>", "TemplateName"),
            ("<Expiry>\u{9B}2J</Expiry>", "Expiry"),
        ])
    func charactersThatCannotBeStoredAreRefusedNamingTheField(fields: String, field: String) async throws {
        let directory = TestHub.temporaryDirectory()
        try await TestHub.with(directory: directory) { hub in
            let response = try await raw(
                .POST, hub.baseURL + "/news/registrations",
                headers: [("Authorization", hub.token(hub.listen)), ("Content-Type", "application/atom+xml")],
                body: Self.templateEntry.replacingOccurrences(of: "FIELDS", with: fields))
            #expect(response.status == 400, "\(response.body)")
            #expect(response.errorDetail?.contains(field) == true, "\(response.body)")
        }
        // Nothing was stored that could keep it from starting again.
        try await TestHub.with(directory: directory) { hub in try await expectHealthy(hub) }
    }

    @Test(.tags(.live), .fullSuiteOnly) func aStoredRowThatCannotBeLoadedIsQuarantinedAndTheHubStarts() async throws {
        let directory = TestHub.temporaryDirectory()
        let device = randomDevice()
        try await TestHub.with(directory: directory) { hub in
            try await hub.client(hub.listen).createOrUpdateInstallation(newsInstallation("good", device: device, tags: ["World"]))
        }
        // Rows an earlier version could write: a registration cut short at a NUL, and an
        // installation whose JSON no longer reads.
        let database = try DatabaseQueue(path: directory.appendingPathComponent("hub.sqlite").path)
        try await database.write { db in
            try db.execute(
                sql: "INSERT INTO registration (hub, id, xml, created, updated) VALUES ('news', '1-2-3', ?, 0, 0)",
                arguments: ["<AppleTemplateRegistrationDescription><RegistrationId>1-2-3</RegistrationId><Priority>1"])
            try db.execute(
                sql: "INSERT INTO installation (hub, id, json) VALUES ('news', ?, '{\"installationId\":')",
                arguments: [Data("bad\u{0}id".utf8)])
            // One that reads, but that no request could make: 500 tags (60 at most).
            let tags = (0..<500).map { "\"t\($0)\"" }.joined(separator: ",")
            try db.execute(
                sql: "INSERT INTO installation (hub, id, json) VALUES ('news', 'many', ?)",
                arguments: [#"{"installationId":"many","platform":"apns","pushChannel":"ab12","tags":["# + tags + "]}"])
        }
        try await database.close()
        try await TestHub.with(directory: directory) { hub in
            try await expectHealthy(hub)
            #expect(try await hub.client(hub.listen).installation(id: "good").pushChannel == .handle(device))
            let metrics = try await raw(.GET, hub.baseURL + "/metrics")
            #expect(metricValue(metrics.body, "hub_quarantined_records") == 3, "\(metrics.body)")
        }
        // Kept, not lost, and not tried again.
        let kept = try DatabaseQueue(path: directory.appendingPathComponent("hub.sqlite").path)
        #expect(try await kept.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM quarantine") } == 3)
        #expect(try await kept.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM registration") } == 0)
        try await kept.close()
        try await TestHub.with(directory: directory) { hub in try await expectHealthy(hub) }
    }

    @Test(.tags(.live), .fullSuiteOnly) func templatesPerInstallationAreBoundedAndBigSendsDoNotStall() async throws {
        try await TestHub.with { hub in
            func installation(_ id: String, templates: Int) -> Installation {
                Installation(
                    installationId: id, platform: .apns, pushChannel: randomDevice(), tags: ["World"],
                    templates: Dictionary(
                        uniqueKeysWithValues: (0..<templates).map {
                            ("t\($0)", InstallationTemplate(body: #"{"aps":{"alert":"$(m)"},"n":\#($0)}"#))
                        }))
            }
            let client = try hub.client(hub.listen)
            await #expect(throws: HubError.self) {
                try await client.createOrUpdateInstallation(installation("many", templates: 1000))
            }
            let most = installation("most", templates: Installation.maximumTemplates)
            try await client.createOrUpdateInstallation(most)
            let sender = try hub.client(hub.full)
            let payload = String(repeating: "x", count: 3900)
            var receipts: [SendReceipt] = []
            for _ in 0..<10 {
                receipts.append(try await sender.send(.template(["m": payload]), tagExpression: "World"))
                try await expectHealthy(hub)
            }
            // Every send is handled: each of the 32 templates rendered once and delivered.
            for receipt in receipts {
                let id = try #require(receipt.notificationId)
                let details = try await eventually("send \(id) to be handled", every: .milliseconds(50)) {
                    () async throws -> NotificationDetails? in
                    let details = try await sender.notificationDetails(id: id)
                    return [.enqueued, .processing].contains(details.state) ? nil : details
                }
                #expect(details.apnsOutcomeCounts.values.reduce(0, +) == Installation.maximumTemplates)
            }
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func theListenKeyCannotListOrEraseOtherDevices() async throws {
        try await TestHub.with { hub in
            let device = randomDevice()
            try await hub.client(hub.listen).createOrUpdateInstallation(newsInstallation("v", device: device, tags: ["World"]))
            _ = try await hub.client(hub.full).send(.template(["messageParam": "private"]), tagExpression: "World")
            let devices = "/_sandbox/apns/news/devices"
            let deliveries = BuiltInPushDelivery.path(hub: "news", device: device, resource: "deliveries")
            #expect(try await get(hub, devices).status == 403)
            #expect(try await get(hub, deliveries).status == 403)
            let erase = try await raw(.DELETE, hub.baseURL + deliveries, headers: [("Authorization", hub.token(hub.listen))])
            #expect(erase.status == 403)
            // The device's own stream and inbox open with the Listen key, as before.
            let got = try await readStream(
                baseURL: hub.baseURL, hub: "news", device: device, token: hub.token(hub.listen), count: 1)
            #expect(got.first?.alertText == "private")
            // Manage still can.
            #expect(try await get(hub, devices, token: hub.token(hub.full)).status == 200)
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func healthzProvesTheSecretOfTheStateFile() async throws {
        try await TestHub.with { hub in
            let stateFile = hub.directory.appendingPathComponent(LocalHubState.fileName)
            let state = try #require(LocalHubState.read(stateFile))
            let secret = try #require(state.secret)
            let challenge = LocalHubProof.makeChallenge()
            let answer = try await raw(.GET, hub.baseURL + "/healthz?challenge=\(challenge)")
            #expect(
                answer.headers.first(name: LocalHubProof.header)
                    == LocalHubProof.answer(challenge: challenge, secret: secret))
            #expect(try await raw(.GET, hub.baseURL + "/healthz").headers.first(name: LocalHubProof.header) == nil)
            #expect(try await raw(.GET, hub.baseURL + "/healthz?challenge=%0A%0A").status == 400)
            #expect(try await verifyAllowingBusyCores(state) == state)
            let mode = try FileManager.default.attributesOfItem(atPath: stateFile.path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func aDataFolderIsMadePrivateAndLeftoversAreCleanedAtStart() async throws {
        let directory = TestHub.temporaryDirectory()
        try await TestHub.with(directory: directory) { _ in }
        chmod(directory.path, 0o755)
        chmod(directory.appendingPathComponent("hub.sqlite").path, 0o644)
        let leftovers = [".hub.json.4242.tmp", ".keys.json.17.tmp"]
        for name in leftovers { try Data("x".utf8).write(to: directory.appendingPathComponent(name)) }
        // What the user keeps beside the hub's files is not the hub's to change.
        let own = directory.appendingPathComponent("notes.sh")
        let ownTemporary = directory.appendingPathComponent(".draft.1.tmp")
        for file in [own, ownTemporary] { try Data("x".utf8).write(to: file) }
        chmod(own.path, 0o755)
        try Data(#"{"pid":1,"url":"http://127.0.0.1:1","secret":"stale"}"#.utf8).write(
            to: directory.appendingPathComponent(LocalHubState.fileName))
        try await TestHub.with(directory: directory) { hub in
            func mode(_ path: String) throws -> Int? {
                try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            }
            #expect(try mode(directory.path) == 0o700)
            #expect(try mode(directory.appendingPathComponent("hub.sqlite").path) == 0o600)
            for name in leftovers {
                #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path))
            }
            #expect(LocalHubState.read(directory.appendingPathComponent(LocalHubState.fileName))?.secret != "stale")
            #expect(try mode(own.path) == 0o755)
            #expect(FileManager.default.fileExists(atPath: ownTemporary.path))
            try await expectHealthy(hub)
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func halfSentRequestsAreClosedAndTheHubKeepsAnswering() async throws {
        try await TestHub.with(configure: {
            $0.idleTimeout = 2
            $0.requestTimeout = 1
            $0.maximumConnections = 64
        }) { hub in
            var halfSent: [RawConnection] = []
            for i in 0..<300 {
                let connection = try RawConnection(port: hub.port)
                if i < 64 { try connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n") }
                halfSent.append(connection)
            }
            let body = try RawConnection(port: hub.port)
            try body.send(
                "PUT /news/installations/x HTTP/1.1\r\nHost: 127.0.0.1:\(hub.port)\r\nAuthorization: \(hub.token(hub.listen))\r\n"
                    + "Content-Length: 100\r\n\r\n{\"installationId\"")
            // The hub closes them all, and answers others meanwhile (queued behind them).
            try await waitHealthy(hub)
            for connection in halfSent.prefix(64) { #expect(await connection.readUntilClosed(timeout: 60).closed) }
            let answer = await body.readUntilClosed(timeout: 60)
            #expect(answer.closed)
            #expect(answer.text.hasPrefix("HTTP/1.1 408"), "\(answer.text)")
            try await waitHealthy(hub)
        }
    }

    /// A request pipelined behind a stream, its body never sent: the connection is closed
    /// when its deadline passes, and no 408 is written into the middle of the stream.
    @Test(.tags(.live), .fullSuiteOnly) func aStalledPipelinedBodyNeverCorruptsTheResponseUnderWay() async throws {
        try await TestHub.with(configure: { $0.requestTimeout = 1 }) { hub in
            let device = randomDevice()
            try await hub.client(hub.listen).createOrUpdateInstallation(newsInstallation("s", device: device, tags: ["World"]))
            let path = BuiltInPushDelivery.path(hub: "news", device: device, resource: "stream")
            let connection = try RawConnection(port: hub.port)
            let auth = "Authorization: \(hub.token(hub.listen))\r\nHost: 127.0.0.1:\(hub.port)\r\n"
            try connection.send("GET \(path) HTTP/1.1\r\n\(auth)Accept: text/event-stream\r\n\r\n")
            let started = await connection.readUntil(containing: "\r\n\r\n", timeout: 60)
            #expect(started.text.hasPrefix("HTTP/1.1 200"), "\(started.text)")
            // The stream's response is under way when the next request comes.
            try connection.send("PUT /news/installations/x HTTP/1.1\r\n\(auth)Content-Length: 100\r\n\r\n{")
            let rest = await connection.readUntilClosed(timeout: 60)
            #expect(rest.closed)
            #expect(!rest.text.contains("HTTP/1.1 408"), "\(rest.text)")
            try await expectHealthy(hub)
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func aDevicesDeliveriesComeInPagesAndABadLimitIsRefused() async throws {
        try await TestHub.with { hub in
            let device = randomDevice()
            try await hub.client(hub.listen).createOrUpdateInstallation(newsInstallation("p", device: device, tags: ["World"]))
            for i in 0..<3 {
                _ = try await hub.client(hub.full).send(.template(["messageParam": "\(i)"]), tagExpression: "World")
            }
            _ = try await readStream(baseURL: hub.baseURL, hub: "news", device: device, token: hub.token(hub.listen), count: 3)
            let path = BuiltInPushDelivery.path(hub: "news", device: device, resource: "deliveries")
            let first = try await get(hub, path + "?limit=2", token: hub.token(hub.full))
            let page = try JSONValue(parsing: first.body)
            #expect(page["deliveries"]?.arrayValue?.count == 2)
            let next = try #require(page["next"].flatMap { if case .number(let n) = $0 { return n } else { return nil } })
            let rest = try JSONValue(parsing: try await get(hub, path + "?since=\(next)", token: hub.token(hub.full)).body)
            #expect(rest["deliveries"]?.arrayValue?.count == 1)
            #expect(try await get(hub, path + "?limit=-1", token: hub.token(hub.full)).status == 400)
        }
    }

    /// A hub stopped while requests are in flight (accepted connections still buffered among
    /// them) shuts down cleanly: the test process lives on, and every installation the hub
    /// acknowledged before it stopped is in its database.
    @Test(.tags(.live), .fullSuiteOnly) func aHubStoppedWithRequestsInFlightStopsCleanlyAndKeepsWhatItAcknowledged()
        async throws
    {
        for _ in 0..<10 {
            let hub = try await TestHub.start()
            let requests = Task {
                await withTaskGroup(of: String?.self) { group in
                    for i in 0..<40 {
                        group.addTask {
                            let answer = try? await raw(
                                .PUT, hub.baseURL + "/news/installations/i\(i)",
                                headers: [("Authorization", hub.token(hub.listen)), ("Content-Type", "application/json")],
                                body: newsInstallation("i\(i)", device: randomDevice(), tags: ["World"]).json.text)
                            return answer.map { (200..<300).contains($0.status) } == true ? "i\(i)" : nil
                        }
                    }
                    var acknowledged: Set<String> = []
                    for await id in group { if let id { acknowledged.insert(id) } }
                    return acknowledged
                }
            }
            await hub.stop()
            let acknowledged = await requests.value
            // The store may still be closing (its last checkpoint): the reader waits its turn.
            var configuration = Configuration()
            configuration.busyMode = .timeout(30)
            let database = try DatabaseQueue(
                path: hub.directory.appendingPathComponent("hub.sqlite").path, configuration: configuration)
            let stored = try await database.read {
                try String.fetchAll($0, sql: "SELECT id FROM installation WHERE hub = 'news'")
            }
            try database.close()
            #expect(acknowledged.isSubset(of: Set(stored)), "acknowledged but not stored: \(acknowledged.subtracting(stored))")
        }
    }

    // MARK: Found by the attack pass on the hardened hub
}
