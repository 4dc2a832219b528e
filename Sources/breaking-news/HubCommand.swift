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
        static let configuration = CommandConfiguration(abstract: "Say whether the local hub is running, where, and since when.")

        func run() async throws {
            let hub = EmbeddedHub(paths: Paths())
            let state: LocalHubState?
            do {
                state = try await hub.verified()
            } catch  where error.kind == .stale {
                state = nil
            } catch {
                if let holder = hub.portHolder() {
                    throw CommandFailure("\(hub.portTaken(by: holder))", exitCode: .hubUnreachable)
                }
                throw CommandFailure("the local hub is not answering as it should: \(error)", exitCode: .hubUnreachable)
            }
            guard let state else {
                // Not running here: say so, or who keeps it from its port.
                if let holder = hub.portHolder() {
                    throw CommandFailure("\(hub.portTaken(by: holder))", exitCode: .hubUnreachable)
                }
                throw CommandFailure(
                    "the local hub is not running (it starts by itself when a command needs it)", exitCode: .hubUnreachable)
            }
            say("running: pid \(state.pid), \(state.url), hubs \(state.hubs.joined(separator: ", ")), since \(state.started)")
            // Its own, and running, but no use while its database does not answer (a node on PostgreSQL).
            if await HubClient.health(baseURL: state.url, query: "", header: LocalHubProof.header)?.status == 503 {
                throw CommandFailure(
                    "the local hub runs but its database does not answer now: requests get 503 until it is back",
                    exitCode: .hubUnreachable)
            }
            // What it keeps: read from its own database beside it (a cluster node's is elsewhere).
            let policy = RetentionPolicy(
                age: state.retention ?? RetentionPolicy.standard.age,
                maximumLogBytes: state.deliveryLogBytes ?? RetentionPolicy.standard.maximumLogBytes, installationTTL: nil)
            let folder = Paths().hubDirectory
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("hub.sqlite").path),
                let store = try? HubStoreAccess.openSQLite(folder: folder),
                let usage = try? await store.usage()
            {
                say(HubStoreAccess.describe(usage, policy: policy))
            }
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
            abstract: "Print the local hub's Listen and Full connection strings."
        )

        @Flag(help: "Print {\"hub\", \"endpoint\", \"listen\", \"full\"} as JSON.")
        var json = false

        @Option(help: "The hub.")
        var hub: String = LocalHubDefaults.hubName

        @Option(help: "Sign with each rule's primary or secondary key (see 'hub keys').")
        var key: LocalHubKeyFile.Slot = .primary

        func run() async throws {
            let embedded = EmbeddedHub(paths: Paths(), hubName: hub)
            // Keys for a port another hub holds would only be refused there.
            if await embedded.running() == nil, let holder = embedded.portHolder() {
                throw CommandFailure("\(embedded.portTaken(by: holder))", exitCode: .hubUnreachable)
            }
            let base = embedded.state()?.url ?? "http://127.0.0.1:\(embedded.port)"
            let strings: (listen: String, full: String)
            do {
                strings = try embedded.connectionStrings(baseURL: base, slot: key)
            } catch {
                throw CommandFailure("\(error)", exitCode: .failure)
            }
            if json {
                say(
                    JSONValue.object([
                        ("hub", .string(hub)), ("endpoint", .string(base + "/")), ("key", .string(key.rawValue)),
                        ("listen", .string(strings.listen)), ("full", .string(strings.full)),
                    ]).text)
            } else {
                say("Listen (\(key.rawValue) key): \(strings.listen)")
                say("Full (\(key.rawValue) key):   \(strings.full)")
            }
        }
    }
}
