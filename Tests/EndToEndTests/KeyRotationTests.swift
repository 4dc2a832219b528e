import AsyncHTTPClient
import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import Synchronization
import TestTiers
import Testing

/// Keys that rotate (issue 31): `breaking-news hub keys regenerate` on a running hub and on
/// two PostgreSQL nodes, with the built binary. Right after the command returns, a token
/// signed with the old key is refused and the stream it opened is closed; the rule's other
/// key and its new one work.
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct KeyRotationTests {
    static let listenRule = AuthorizationRule.listenRuleName

    /// The status a Listen call answers with (a claim: 200 or 201 when the key works), on a
    /// connection of its own. A call that fails without one (no answer, a connection closed)
    /// is recorded with its error, which a comparison of statuses alone would not show.
    ///
    /// On the shared pool of kept-alive connections, the claim right after a regeneration
    /// failed twice in about twenty full runs under load with "the hub closed the connection",
    /// before any answer, while the change was ending the stream opened with the old key (a
    /// race of connection reuse, it seems, that a client with retries rides out). On a
    /// connection of its own the claim gets the hub's answer to the key, which is what this
    /// test is about.
    static func claimStatus(_ connectionString: ConnectionString, hub: String) async -> Int? {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let client = HubClient(connectionString: connectionString, hub: hub, httpClient: http, retryPolicy: .none)
        let status: Int?
        do {
            _ = try await client.claimBuiltInPushDevice(randomDevice())
            status = 200
        } catch {
            if error.status == nil { Issue.record("the claim failed without an HTTP status: \(String(reflecting: error))") }
            status = error.status
        }
        try? await http.shutdown()
        return status
    }

    /// A device's stream read in the background: whether it ended (closed by the hub).
    final class OpenStream: Sendable {
        let ended = Mutex(false)
        let task: Mutex<Task<Void, Never>?> = Mutex(nil)

        init(_ connectionString: ConnectionString, hub: String) async throws {
            let client = HubClient(connectionString: connectionString, hub: hub, retryPolicy: .none)
            let device = randomDevice()
            let secret = try await client.claimBuiltInPushDevice(device).secret
            let stream = try await client.deviceStream(device: device, after: nil, epoch: nil, secret: secret)
            let reader = Task { [self] in
                do {
                    for try await _ in stream {}
                } catch {}
                self.ended.withLock { $0 = true }
            }
            task.withLock { $0 = reader }
        }

        var isOpen: Bool { !ended.withLock { $0 } }

        func waitForEnd(within limit: Duration = .seconds(20)) async -> Bool {
            let deadline = ContinuousClock.now + limit
            while isOpen, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
            return !isOpen
        }

        func cancel() { task.withLock { $0?.cancel() } }
    }

    @Test func regeneratingTheListenPrimaryOnARunningHub() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        // An open terminal of this machine, receiving.
        let follow = try user.start(["log", "--follow"])
        defer { follow.stop() }
        let before = try await user.run(["send", "before", "--category", "World"])
        #expect(before.status == 0, "\(before.stderr)")
        #expect(await follow.waitFor { out, _ in out.contains("Breaking World News : before") }, "\(follow.stderr)")

        func strings(_ slot: String) async throws -> (listen: ConnectionString, full: ConnectionString) {
            let printed = try await user.run(["hub", "connection-strings", "--json", "--key", slot])
            try #require(printed.status == 0, "\(printed.stderr)")
            let json = try JSONValue(parsing: printed.stdout)
            #expect(json["key"] == .string(slot))
            return (
                try ConnectionString(parsing: try #require(json["listen"]?.stringValue)),
                try ConnectionString(parsing: try #require(json["full"]?.stringValue))
            )
        }
        let old = try await strings("primary")
        let secondary = try await strings("secondary")
        #expect(old.listen.key != secondary.listen.key)
        let hub = LocalHubDefaults.hubName
        #expect(await Self.claimStatus(old.listen, hub: hub) == 200)
        let stream = try await OpenStream(old.listen, hub: hub)
        defer { stream.cancel() }
        // Keys are listed without their values unless asked.
        let listed = try await user.run(["hub", "keys"])
        #expect(listed.status == 0 && listed.stdout.contains(Self.listenRule), "\(listed.stdout) \(listed.stderr)")
        #expect(!listed.stdout.contains(old.listen.key), "a key printed unasked")

        let regenerated = try await user.run(["hub", "keys", "regenerate", Self.listenRule])
        #expect(regenerated.status == 0, "\(regenerated.stdout) \(regenerated.stderr)")
        #expect(regenerated.stdout.contains("serves them now"), "\(regenerated.stdout)")

        // Right after: the old key is refused, its stream closed; the secondary and the new
        // primary work; the Full rule was not touched.
        #expect(await Self.claimStatus(old.listen, hub: hub) == 401)
        #expect(await stream.waitForEnd(), "the stream opened with the old key is still open")
        #expect(await Self.claimStatus(secondary.listen, hub: hub) == 200)
        let new = try await strings("primary")
        #expect(new.listen.key != old.listen.key)
        #expect(new.full.key == old.full.key)
        #expect(await Self.claimStatus(new.listen, hub: hub) == 200)

        // The terminal follows the rotation by itself.
        let after = try await user.run(["send", "after the rotation", "--category", "World"])
        #expect(after.status == 0, "\(after.stderr)")
        #expect(
            await follow.waitFor(timeout: 30) { out, _ in out.contains("Breaking World News : after the rotation") },
            "\(follow.stdout) \(follow.stderr)")
    }

    @Test func rulesAreAddedAndRemovedAndBadChangesRefused() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        let added = try await user.run(["hub", "keys", "add", "backend", "--rights", "Send"])
        #expect(added.status == 0, "\(added.stderr)")
        let listed = try JSONValue(parsing: try await user.run(["hub", "keys", "--json", "--show-keys"]).stdout)
        let rules = try #require(listed["rules"]?.arrayValue)
        let backend = try #require(rules.first { $0["name"] == .string("backend") })
        #expect(backend["rights"] == .strings(["Send"]))
        let key = try #require(backend["primaryKey"]?.stringValue)
        // The new rule sends, and may not listen.
        let printed = try JSONValue(parsing: try await user.run(["hub", "connection-strings", "--json"]).stdout)
        let endpoint = try #require(printed["endpoint"]?.stringValue)
        let backendString = try ConnectionString(
            parsing: LocalHubKeyFile.connectionString(baseURL: endpoint, hub: "breakingnews", rule: "backend", key: key))
        let client = HubClient(connectionString: backendString, hub: "breakingnews", retryPolicy: .none)
        _ = try await client.send(.template(["messageParam": "from the back end"]), tagExpression: "World")
        #expect(await Self.claimStatus(backendString, hub: "breakingnews") == 403)

        // Refused, each with a one-line reason and exit code 5: a default rule's removal, a
        // rule that exists, Manage alone, an unknown rule; 2 for rights that are not rights.
        for (arguments, reason) in [
            (["remove", Self.listenRule], "cannot be removed"), (["add", "backend", "--rights", "Listen"], "already"),
            (["add", "admin", "--rights", "Manage"], "Manage needs Listen and Send"),
            (["regenerate", "nobody"], "no rule named"),
        ] {
            let refused = try await user.run(["hub", "keys"] + arguments)
            #expect(refused.status == 5, "\(arguments): \(refused.stdout) \(refused.stderr)")
            #expect(refused.stderrLines.count == 1 && refused.stderr.contains(reason), "\(arguments): \(refused.stderr)")
        }
        #expect(try await user.run(["hub", "keys", "add", "x", "--rights", "Everything"]).status == 2)
        // Twelve rules at most, as in Azure (two default ones and backend, then nine more).
        for index in 4...12 {
            #expect(try await user.run(["hub", "keys", "add", "r\(index)", "--rights", "Listen"]).status == 0)
        }
        let thirteenth = try await user.run(["hub", "keys", "add", "r13", "--rights", "Listen"])
        #expect(thirteenth.status == 5 && thirteenth.stderr.contains("12 rules"), "\(thirteenth.stderr)")

        let removed = try await user.run(["hub", "keys", "remove", "backend"])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(await Self.claimStatus(backendString, hub: "breakingnews") == 401)
    }

    /// Two nodes on one database; the first serves a user's home (its folder and port), so
    /// that user's terminal is a terminal of that node's machine.
    @Test(.tags(.postgres), .timeLimit(.minutes(4))) func regeneratingTheListenPrimaryOnTwoNodes() async throws {
        let server = try await PostgresServer.shared()
        let database = try await server.createDatabase()
        let port = try NginxFront.freePort()
        let user = Command.freshHome(extra: ["BREAKING_NEWS_HUB_PORT": String(port)])
        let hub = LocalHubDefaults.hubName
        let folders = [user.home.appendingPathComponent("data/hub"), TestHub.temporaryDirectory()]
        try DataFolder.prepare(folders[0], files: LocalHubDefaults.dataFiles)
        var nodes: [HubProcess] = []
        defer { for node in nodes { node.process.signal(SIGKILL) } }
        for (index, folder) in folders.enumerated() {
            nodes.append(
                try await HubProcess.start(
                    directory: folder, hub: hub, port: index == 0 ? port : 0,
                    arguments: ["--store", database, "--node", "node\(index + 1)"],
                    log: folder.appendingPathComponent("node.log")))
        }
        // The user's terminal, on the first node, receiving.
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        let follow = try user.start(["log", "--follow"])
        defer { follow.stop() }
        #expect(try await user.run(["send", "before", "--category", "World"]).status == 0)
        #expect(await follow.waitFor { out, _ in out.contains("Breaking World News : before") }, "\(follow.stderr)")

        func listen(_ index: Int, _ slot: LocalHubKeyFile.Slot) throws -> ConnectionString {
            let contents = try LocalHubKeyFile.read(folders[index].appendingPathComponent(LocalHubKeyFile.fileName))
            let key = try #require(contents.key(hub: hub, rule: Self.listenRule, slot: slot))
            return try ConnectionString(
                parsing: LocalHubKeyFile.connectionString(
                    baseURL: nodes[index].state.url, hub: hub, rule: Self.listenRule, key: key))
        }
        let old = try (0..<2).map { try listen($0, .primary) }
        let secondary = try (0..<2).map { try listen($0, .secondary) }
        #expect(old[0].key == old[1].key, "every node serves the keys the first one made")
        let stream = try await OpenStream(old[1], hub: hub)
        defer { stream.cancel() }

        // The node's folder holds a copy of the keys: changing it there is refused, and says where.
        let inFolder = try await user.run(["hub", "keys", "regenerate", Self.listenRule])
        #expect(inFolder.status == 2 && inFolder.stderr.contains("--store"), "\(inFolder.stdout) \(inFolder.stderr)")
        #expect(try listen(0, .primary).key == old[0].key)
        let regenerated = try await Command.freshHome().run(
            ["hub", "keys", "regenerate", Self.listenRule, "--store", database, "--hub", hub])
        #expect(regenerated.status == 0, "\(regenerated.stdout) \(regenerated.stderr)")
        #expect(regenerated.stdout.contains("every live node serves them now"), "\(regenerated.stdout)")

        for index in 0..<2 {
            #expect(await Self.claimStatus(old[index], hub: hub) == 401, "node\(index + 1)")
            #expect(await Self.claimStatus(secondary[index], hub: hub) == 200, "node\(index + 1)")
            // Each node's folder has the new keys, which the terminals of its machine read.
            let new = try listen(index, .primary)
            #expect(new.key != old[index].key)
            #expect(await Self.claimStatus(new, hub: hub) == 200, "node\(index + 1)")
        }
        #expect(await stream.waitForEnd(), "the stream opened with the old key on node2 is still open")
        // The terminal follows the rotation by itself.
        #expect(try await user.run(["send", "after the rotation", "--category", "World"]).status == 0)
        #expect(
            await follow.waitFor(timeout: 30) { out, _ in out.contains("Breaking World News : after the rotation") },
            "\(follow.stdout) \(follow.stderr)")
    }
}
