import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import TestTiers
import Testing

/// A node's own tools find it (issue 51): `hub status` and `hub connection-strings` take the
/// node's folder (`--data`) and the cluster's database (`--store`), and the strings name the
/// address clients use (`--endpoint`).
@Suite(.tags(.live, .postgres), .fullSuiteOnly) struct NodeToolsTests {
    @Test(.timeLimit(.minutes(3))) func statusAndConnectionStringsFindANodeByItsFolderAndItsDatabase() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let folder = TestHub.temporaryDirectory()
        let user = Command.freshHome()
        let node = try await HubProcess.start(
            directory: folder, hub: "breakingnews", arguments: ["--store", url, "--node", "n1"])
        let strings = ["hub", "connection-strings", "--json"]
        func json(_ arguments: [String]) async throws -> JSONValue {
            let run = try await user.run(arguments)
            try #require(run.status == 0, "\(arguments): \(run.stderr)")
            return try JSONValue(parsing: Data(run.stdout.utf8))
        }
        // The folder's copy of the keys, for the node's own address or the front's.
        let own = try await json(strings + ["--data", folder.path])
        #expect(own["endpoint"]?.stringValue == node.state.url + "/")
        #expect(own["full"]?.stringValue == node.full.description, "\(own)")
        let front = try await json(strings + ["--data", folder.path, "--endpoint", "https://news.example.com/"])
        #expect(front["full"]?.stringValue?.hasPrefix("Endpoint=https://news.example.com/;SharedAccessKeyName=") == true)
        // The database's keys, from a machine without the node's folder: the same strings.
        let stored = try await json(strings + ["--store", url, "--endpoint", "https://news.example.com/"])
        #expect(stored["full"] == front["full"] && stored["listen"] == front["listen"], "\(stored) \(front)")
        let bad = try await user.run(["hub", "connection-strings", "--endpoint", "ftp://news.example.com/"])
        #expect(bad.status == 2 && bad.stderr.contains("--endpoint takes an http:// or https:// address"), "\(bad.stderr)")

        // Status on the node's folder: the node named, and where its figures are.
        let bare = try await user.run(["hub", "status", "--data", folder.path])
        #expect(bare.status == 0, "\(bare.stderr)")
        #expect(bare.stdout.contains("node n1 of a cluster") && bare.stdout.contains("give --store"), "\(bare.stdout)")
        let full = try await user.run(["hub", "status", "--data", folder.path, "--store", url])
        #expect(full.status == 0, "\(full.stderr)")
        for line in [
            "store: postgres, ", "schema: ", "migrations, the last v", "nodes heard from in the last 5 minutes: n1 (",
            "delivery log ",
        ] {
            #expect(full.stdout.contains(line), "\(line) missing from \(full.stdout)")
        }
        // A key changed with a node gone quiet a minute ago: the live node serves it, the quiet one is named.
        let now = Date().timeIntervalSince1970
        try await PostgresServer.shared().psql(
            "INSERT INTO change_reader (node, position, seen, keys_generation) VALUES ('n9', 0, \(now - 100), 0)",
            database: url)
        let regenerated = try await user.run([
            "hub", "keys", "regenerate", "DefaultListenSharedAccessSignature", "--key", "secondary", "--store", url,
        ])
        #expect(regenerated.status == 0, "\(regenerated.stderr)")
        #expect(regenerated.stdout.contains("every live node serves them now (n1)"), "\(regenerated.stdout)")
        #expect(regenerated.stdout.contains("not heard from in the last 45 s: n9"), "\(regenerated.stdout)")
        // Pruning a node's folder points to its database, where its log is.
        let prune = try await user.run(["hub", "prune", "--data", folder.path])
        #expect(prune.status == 2 && prune.stderr.contains("node n1 of a cluster") && prune.stderr.contains("give --store"))
        // Stopped, the folder says so (exit 3), and the database still tells its figures.
        await node.stop()
        let stopped = try await user.run(["hub", "status", "--data", folder.path, "--store", url])
        #expect(stopped.status == 3 && stopped.stderr.contains("no hub is running on \(folder.path)"), "\(stopped.stderr)")
        #expect(stopped.stdout.contains("store: postgres, "), "\(stopped.stdout)")
    }
}
