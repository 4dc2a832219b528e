import ArgumentParser
import BreakingNewsKit
import Foundation
import LocalHub
import LocalHubSupport
import Logging
import NewsCommandLine
import NotificationHubs

/// `breaking-news hub …`: the local Notification Hubs-compatible server.
struct HubCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "Run and manage the local hub (a Notification Hubs emulator with a built-in push service).",
        subcommands: [
            Serve.self, Status.self, Stop.self, Prune.self, Backup.self, Restore.self, Migrate.self, ConnectionStrings.self,
            Keys.self, Devices.self,
        ]
    )

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say whether the hub is running, where and since when, and what its store holds.",
            discussion: """
                On a node's folder (--data) with its database (--store), also the nodes heard from, how far each \
                is behind the change log, and the schema.
                """)

        @OptionGroup var place: HubPlace

        func run() async throws {
            let hub = EmbeddedHub(directory: place.folder)
            // Not running is said after what the store holds: a stopped node's database still tells.
            var notRunning: CommandFailure?
            var state: LocalHubState?
            do {
                state = try await hub.verified()
            } catch  where error.kind == .stale {
                state = nil
            } catch {
                if let holder = hub.portHolder(), place.data == nil {
                    throw CommandFailure("\(hub.portTaken(by: holder))", exitCode: .hubUnreachable)
                }
                throw CommandFailure(
                    "the hub of \(place.folder.path) is not answering as it should: \(error)", exitCode: .hubUnreachable)
            }
            if let state {
                let node = state.node.map { ", node \($0) of a cluster" } ?? ""
                say(
                    "running: pid \(state.pid), \(state.url), hubs \(state.hubs.joined(separator: ", "))\(node), since \(state.started)"
                )
                // Its own, and running, but no use while its database does not answer (a node on PostgreSQL).
                if await HubClient.health(baseURL: state.url, query: "", header: LocalHubProof.header)?.status == 503 {
                    throw CommandFailure(
                        "the hub runs but its database does not answer now: requests get 503 until it is back",
                        exitCode: .hubUnreachable)
                }
            } else if place.data == nil, let holder = hub.portHolder() {
                // Not running here: say so, or who keeps it from its port.
                throw CommandFailure("\(hub.portTaken(by: holder))", exitCode: .hubUnreachable)
            } else {
                notRunning = CommandFailure(
                    place.data == nil
                        ? "the local hub is not running (it starts by itself when a command needs it)"
                        : "no hub is running on \(place.folder.path)",
                    exitCode: .hubUnreachable)
            }
            // What it keeps: the retention its state file names (a running hub's), else the defaults.
            let policy = RetentionPolicy(
                age: state?.retention ?? RetentionPolicy.standard.age,
                maximumLogBytes: state?.deliveryLogBytes ?? RetentionPolicy.standard.maximumLogBytes, installationTTL: nil)
            if let url = place.storeURL {
                try await HubStoreAccess.withPostgres(url, password: try place.storePassword(), purpose: "status") { store in
                    let (usage, cluster) = (try await store.usage(), try await store.clusterStatus())
                    say(Self.describe(cluster, store: url, now: Date()))
                    say(HubStoreAccess.describe(usage, policy: policy))
                }
            } else if let node = state?.node {
                say(
                    "node \(node) keeps everything in its PostgreSQL database: give --store (and --store-password-file) for its figures"
                )
            } else if notRunning == nil || place.data != nil,
                FileManager.default.fileExists(atPath: place.folder.appendingPathComponent("hub.sqlite").path),
                let store = try? HubStoreAccess.openSQLite(folder: place.folder),
                let usage = try? await store.usage()
            {
                say("store: sqlite, \(place.folder.appendingPathComponent("hub.sqlite").path)")
                say(HubStoreAccess.describe(usage, policy: policy))
            }
            if let notRunning { throw notRunning }
        }

        /// The store, the nodes heard from with how far each is behind, and the schema.
        static func describe(_ cluster: ClusterStatus, store url: String, now: Date) -> String {
            let live = cluster.nodes.filter { now.timeIntervalSince($0.seen) < 300 }
            let nodes = live.map { node in
                let behind = node.behind == 0 ? "up to date" : "\(node.behind) change\(node.behind == 1 ? "" : "s") behind"
                return "\(node.name) (\(behind), heard \(Int(max(0, now.timeIntervalSince(node.seen)).rounded())) s ago)"
            }
            let gone = cluster.nodes.count - live.count
            return """
                store: postgres, \(PostgresHubStore.redacted(url)); schema: \(cluster.migrations) migrations\
                \(cluster.lastMigration.map { ", the last \($0)" } ?? "")
                nodes heard from in the last 5 minutes: \(nodes.isEmpty ? "none" : nodes.joined(separator: ", "))\
                \(gone > 0 ? "; \(gone) more not heard from since" : ""); change log at \(cluster.head)
                """
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop the local hub.")

        func run() async throws {
            let hub = EmbeddedHub(paths: Paths())
            let stopped: StoppedHub?
            do {
                stopped = try await hub.stop()
            } catch {
                throw CommandFailure("not stopping anything: \(error)", exitCode: .hubUnreachable)
            }
            guard let stopped else { return say("the local hub was not running") }
            guard stopped.ending != .survived else { throw CommandFailure(stopped.line, exitCode: .failure) }
            say(stopped.line)
        }
    }

    struct ConnectionStrings: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "connection-strings",
            abstract: "Print the hub's Listen and Full connection strings.",
            discussion: """
                The local hub's by default; a node's with --data (its folder's copy of the keys) or --store (the \
                cluster's database). --endpoint names the address clients use, such as the front's.
                """
        )

        @Flag(help: "Print {\"hub\", \"endpoint\", \"listen\", \"full\"} as JSON.")
        var json = false

        @Option(help: "The hub.")
        var hub: String = LocalHubDefaults.hubName

        @Option(help: "Sign with each rule's primary or secondary key (see 'hub keys').")
        var key: LocalHubKeyFile.Slot = .primary

        @Option(
            help: ArgumentHelp(
                "The address clients reach the hub at (default: the running hub's own).", valueName: "https://host/"))
        var endpoint: String?

        @OptionGroup var place: HubPlace

        func validate() throws {
            if let endpoint {
                guard let url = URLComponents(string: endpoint), ["http", "https"].contains(url.scheme ?? ""),
                    let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil, url.user == nil
                else {
                    throw ValidationError("--endpoint takes an http:// or https:// address, such as https://news.example.com/")
                }
            }
        }

        func run() async throws {
            let embedded = EmbeddedHub(directory: place.folder, hubName: hub)
            // Keys for a port another hub holds would only be refused there.
            if endpoint == nil, place.data == nil, place.storeURL == nil, await embedded.running() == nil,
                let holder = embedded.portHolder()
            {
                throw CommandFailure("\(embedded.portTaken(by: holder))", exitCode: .hubUnreachable)
            }
            let base = endpoint ?? embedded.state()?.url ?? "http://127.0.0.1:\(embedded.port)"
            let strings: (listen: String, full: String)
            if let url = place.storeURL {
                let stored = try await HubStoreAccess.withPostgres(url, password: try place.storePassword(), purpose: "keys") {
                    try await $0.storedKeys()
                }
                guard let stored else {
                    throw CommandFailure("the database holds no keys yet (the first node makes them)", exitCode: .failure)
                }
                guard let found = stored.connectionStrings(hub: hub, baseURL: base, slot: key) else {
                    throw CommandFailure(
                        "the database has no hub '\(hub)' with the default rules' \(key.rawValue) keys", exitCode: .failure)
                }
                strings = found
            } else {
                do {
                    strings = try embedded.connectionStrings(baseURL: base, slot: key)
                } catch {
                    throw CommandFailure("\(error)", exitCode: .failure)
                }
            }
            if json {
                say(
                    JSONValue.object([
                        ("hub", .string(hub)), ("endpoint", .string(base.hasSuffix("/") ? base : base + "/")),
                        ("key", .string(key.rawValue)), ("listen", .string(strings.listen)), ("full", .string(strings.full)),
                    ]).text)
            } else {
                say("Listen (\(key.rawValue) key): \(strings.listen)")
                say("Full (\(key.rawValue) key):   \(strings.full)")
            }
        }
    }
}
