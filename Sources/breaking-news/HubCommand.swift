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
        abstract: "Run and manage the local hub (a Notification Hubs emulator with a sandbox push service).",
        subcommands: [Serve.self, Status.self, Stop.self, ConnectionStrings.self]
    )

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the local hub in the foreground.",
            discussion: """
                Serves the Notification Hubs REST API at http://HOST:PORT/{hub}/… and the sandbox push service at \
                /_sandbox/apns/{hub}/devices/{token}/stream. Defaults: 127.0.0.1, port \(LocalHubDefaults.port) \
                (or BREAKING_NEWS_HUB_PORT), hub '\(LocalHubDefaults.hubName)', data in the Breaking News data folder. \
                Keys are made on first start; print them with 'breaking-news hub connection-strings'.
                """
        )

        @Option(help: "Address to listen on.")
        var host = "127.0.0.1"

        @Option(help: "Port to listen on (0 picks a free one).")
        var port: Int?

        @Option(help: "Folder for the database, keys and state file.")
        var data: String?

        @Option(name: .customLong("hub"), help: "A hub to serve (repeatable).")
        var hubs: [String] = []

        @Flag(help: "Serve HTTPS with a self-signed certificate kept beside the keys.")
        var tls = false

        @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
        var logLevel: String = "info"

        @Option(name: .customLong("max-connections"), help: "Connections served at once; more wait to be accepted.")
        var maximumConnections: Int = 4096

        @Option(
            name: .customLong("idle-timeout"),
            help: "Seconds a connection may wait for a request's head, or idle between requests.")
        var idleTimeout: Double = 30

        @Option(
            name: .customLong("request-timeout"), help: "Seconds a request's body may take after its head (408 after).")
        var requestTimeout: Double = 20

        @Option(
            name: .customLong("max-installations"), help: "Installations, and legacy registrations, one hub may hold.")
        var maximumInstallations: Int = 100_000

        @Option(
            name: .customLong("max-hub-megabytes"),
            help: "Megabytes one hub's installations and registrations may take in all.")
        var maximumHubMegabytes: Int = 256

        @Option(
            name: .customLong("config"),
            help: ArgumentHelp(
                "The push services' credentials (providers.json); default: the data folder's, when there.",
                valueName: "file"))
        var providersFile: String?

        @Option(
            help: ArgumentHelp(
                "A PostgreSQL database that several hub nodes share (or BREAKING_NEWS_HUB_STORE); default: SQLite in the data folder.",
                valueName: "postgres://user@host:port/database"))
        var store: String?

        @Option(help: "This node's name in logs, claims and /metrics (default: host name and process id).")
        var node: String?

        func validate() throws {
            if let store, !(store.hasPrefix("postgres://") || store.hasPrefix("postgresql://")) {
                throw ValidationError("--store takes a postgres:// URL")
            }
            if let node,
                node.isEmpty || node.count > 64
                    || !node.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) })
            {
                throw ValidationError("--node takes 1 to 64 letters, digits, '-', '_' or '.'")
            }
            guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
            if let port, !(0...65535).contains(port) { throw ValidationError("--port must be 0 to 65535") }
            guard (1...1_000_000).contains(maximumConnections) else {
                throw ValidationError("--max-connections must be 1 to 1000000")
            }
            guard (1...86_400).contains(idleTimeout), (1...86_400).contains(requestTimeout) else {
                throw ValidationError("--idle-timeout and --request-timeout must be 1 to 86400 seconds")
            }
            guard maximumInstallations >= 1 else { throw ValidationError("--max-installations must be at least 1") }
            guard (1...1_048_576).contains(maximumHubMegabytes) else {
                throw ValidationError("--max-hub-megabytes must be 1 to 1048576")
            }
            for hub in hubs where hub.isEmpty || !hub.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) {
                throw ValidationError("hub names use letters, digits, '-', '_' and '.': '\(hub)'")
            }
        }

        func run() async throws {
            let paths = Paths()
            let environmentPort = ProcessInfo.processInfo.environment["BREAKING_NEWS_HUB_PORT"].flatMap(Int.init)
            let configuration = LocalHubConfiguration(
                host: host, port: port ?? environmentPort ?? LocalHubDefaults.port,
                dataDirectory: data.map { URL(fileURLWithPath: $0) } ?? paths.hubDirectory,
                hubs: hubs.isEmpty ? [LocalHubDefaults.hubName] : hubs, tls: tls, logLevel: Logger.Level(rawValue: logLevel)!,
                idleTimeout: idleTimeout, requestTimeout: requestTimeout, maximumConnections: maximumConnections,
                maximumInstallationsPerHub: maximumInstallations, maximumBytesPerHub: maximumHubMegabytes << 20,
                providersFile: providersFile.map { URL(fileURLWithPath: $0) },
                storeURL: store
                    ?? ProcessInfo.processInfo.environment["BREAKING_NEWS_HUB_STORE"].flatMap { $0.isEmpty ? nil : $0 },
                nodeName: node)
            // Everything the hub writes (database, journal, keys, state, certificate) is the
            // owner's alone.
            umask(0o077)
            var logger = Logger(label: "local-hub")
            logger.logLevel = configuration.logLevel
            do {
                try await LocalHubServer.run(configuration: configuration, logger: logger)
            } catch let error as LocalHubStartError {
                throw CommandFailure(error.description, exitCode: .failure)
            }
        }
    }

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
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop the local hub.")

        func run() async throws {
            let hub = EmbeddedHub(paths: Paths())
            do {
                if let state = try await hub.stop() {
                    say("stopped the local hub (pid \(state.pid))")
                } else {
                    say("the local hub was not running")
                }
            } catch {
                throw CommandFailure("not stopping anything: \(error)", exitCode: .hubUnreachable)
            }
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

        func run() async throws {
            let embedded = EmbeddedHub(paths: Paths(), hubName: hub)
            // Keys for a port another hub holds would only be refused there.
            if await embedded.running() == nil, let holder = embedded.portHolder() {
                throw CommandFailure("\(embedded.portTaken(by: holder))", exitCode: .hubUnreachable)
            }
            let base = embedded.state()?.url ?? "http://127.0.0.1:\(embedded.port)"
            let strings: (listen: String, full: String)
            do {
                strings = try embedded.connectionStrings(baseURL: base)
            } catch {
                throw CommandFailure("\(error)", exitCode: .failure)
            }
            if json {
                say(
                    JSONValue.object([
                        ("hub", .string(hub)), ("endpoint", .string(base + "/")), ("listen", .string(strings.listen)),
                        ("full", .string(strings.full)),
                    ]).text)
            } else {
                say("Listen: \(strings.listen)")
                say("Full:   \(strings.full)")
            }
        }
    }
}
