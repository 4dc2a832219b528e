import ArgumentParser
import BreakingNewsKit
import Foundation
import LocalHub
import LocalHubSupport
import Logging
import NewsCommandLine
import NotificationHubs

extension HubCommand {
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the local hub in the foreground.",
            discussion: """
                Serves the Notification Hubs REST API at http://HOST:PORT/{hub}/… and the built-in push service at \
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

        @Option(
            name: .customLong("log-file"),
            help: ArgumentHelp(
                "Write the log, and standard output and error, to this file, rotated by size (\(RotatingLogFile.kept) older files kept as FILE.1…); default: standard error.",
                valueName: "file"))
        var logFile: String?

        @Option(
            name: .customLong("log-file-size"),
            help: ArgumentHelp("The size at which --log-file is rotated (K, M; at least 16K).", valueName: "size"))
        var logFileSize = ByteSize(bytes: RotatingLogFile.defaultMaximumBytes)

        @Option(name: .customLong("max-connections"), help: "Connections served at once; more wait to be accepted.")
        var maximumConnections: Int = 4096

        @Option(
            name: .customLong("idle-timeout"),
            help: ArgumentHelp(
                "How long a connection may wait for a request's head, or idle between requests.", valueName: "duration"))
        var idleTimeout = HubDuration(seconds: 30)

        @Option(
            name: .customLong("request-timeout"),
            help: ArgumentHelp("How long a request's body may take after its head (408 after).", valueName: "duration"))
        var requestTimeout = HubDuration(seconds: 20)

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

        @Option(
            name: .customLong("store-password-file"),
            help: ArgumentHelp(
                "A file holding the database password (or BREAKING_NEWS_HUB_STORE_PASSWORD); keeps it out of ps.",
                valueName: "file"))
        var storePasswordFile: String?

        @Option(
            name: .customLong("client-new-devices-per-hour"),
            help: "New devices (claims, installations, registrations) one client may add an hour; 0: no limit.")
        var newDevicesPerHour: Int = ClientRates().newDevicesPerHour

        @Option(
            name: .customLong("client-megabytes-per-hour"),
            help: "Megabytes of installations and registrations one client may write an hour; 0: no limit.")
        var megabytesPerHour: Int = ClientRates().bytesPerHour >> 20

        @Option(name: .customLong("client-streams"), help: "Device streams one client may hold open; 0: no limit.")
        var clientStreams: Int = ClientRates().streams

        @Option(
            name: .customLong("client-connections"),
            help: "Connections one client may hold open (a trusted proxy is not counted); 0: no limit.")
        var clientConnections: Int = ClientRates().connections

        @Option(
            name: .customLong("trusted-proxy"),
            help: ArgumentHelp(
                "A proxy (address or network) whose X-Forwarded-For names the client (repeatable).", valueName: "address[/bits]"))
        var trustedProxies: [String] = []

        @Option(
            name: .customLong("metrics-token"),
            help:
                "The bearer token /metrics asks of peers that are not this machine (visible in ps: prefer --metrics-token-file).")
        var metricsToken: String?

        @Option(
            name: .customLong("metrics-token-file"),
            help: ArgumentHelp("A file holding the /metrics bearer token (or BREAKING_NEWS_METRICS_TOKEN).", valueName: "file"))
        var metricsTokenFile: String?

        @Option(
            name: .customLong("claim-lifetime"),
            help: ArgumentHelp(
                "How long a claimed terminal token nothing uses is kept (s, m, h, d).", valueName: "duration"))
        var claimLifetime: HubDuration = HubDuration(seconds: 7 * 86_400)

        @Option(
            help: ArgumentHelp(
                "How long deliveries and ended notifications are kept (s, m, h, d).", valueName: "duration"))
        var retention = HubDuration(seconds: RetentionPolicy.standard.age)

        @Option(
            name: .customLong("delivery-log-megabytes"),
            help: "The most the delivery log may take; over it, the devices holding the most give their oldest first.")
        var deliveryLogMegabytes: Int = Int(RetentionPolicy.standard.maximumLogBytes >> 20)

        @Option(
            name: .customLong("installation-ttl"),
            help: ArgumentHelp(
                "The expiry given to installations and registrations that name none (s, m, h, d; 0: never).",
                valueName: "duration"))
        var installationTTL = HubDuration(seconds: 0)

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
            guard ((16 << 10)...(1 << 30)).contains(logFileSize.bytes) else {
                throw ValidationError("--log-file-size must be 16K to 1G")
            }
            if let port, !(0...65535).contains(port) { throw ValidationError("--port must be 0 to 65535") }
            guard (1...1_000_000).contains(maximumConnections) else {
                throw ValidationError("--max-connections must be 1 to 1000000")
            }
            guard (1...86_400).contains(idleTimeout.seconds), (1...86_400).contains(requestTimeout.seconds) else {
                throw ValidationError("--idle-timeout and --request-timeout must be 1s to 1d")
            }
            guard retention.seconds >= 10 else { throw ValidationError("--retention must be at least 10s") }
            guard (1...1_048_576).contains(deliveryLogMegabytes) else {
                throw ValidationError("--delivery-log-megabytes must be 1 to 1048576")
            }
            guard installationTTL.seconds == 0 || installationTTL.seconds >= 60 else {
                throw ValidationError("--installation-ttl must be 0 (never) or at least 1m")
            }
            guard maximumInstallations >= 1 else { throw ValidationError("--max-installations must be at least 1") }
            guard (1...1_048_576).contains(maximumHubMegabytes) else {
                throw ValidationError("--max-hub-megabytes must be 1 to 1048576")
            }
            for hub in hubs {
                if let problem = LocalHubKeyFile.hubNameProblem(hub) { throw ValidationError(problem) }
            }
            guard newDevicesPerHour >= 0, (0...1_048_576).contains(megabytesPerHour), clientStreams >= 0,
                clientConnections >= 0
            else {
                throw ValidationError(
                    "--client-new-devices-per-hour, --client-megabytes-per-hour, --client-streams and --client-connections "
                        + "take 0 or more")
            }
            do {
                _ = try TrustedProxies(trustedProxies)
            } catch {
                throw ValidationError(error.description)
            }
            guard claimLifetime.seconds >= 60 else { throw ValidationError("--claim-lifetime must be at least 1m") }
        }

        /// The database password: from a file or the environment; a password in a --store URL
        /// on the command line is used, with a warning (every user sees it in `ps`).
        func resolvedStorePassword() throws -> String? {
            if let store, URLComponents(string: store)?.password != nil {
                printError(
                    "warning: the password in --store is visible to every user of this machine in 'ps'; use "
                        + "--store-password-file or BREAKING_NEWS_HUB_STORE_PASSWORD")
            }
            return try Self.secret(
                file: storePasswordFile, flag: "--store-password-file", environment: "BREAKING_NEWS_HUB_STORE_PASSWORD")
        }

        /// The /metrics token: from the command line (with a warning), a file, or the environment;
        /// at least `minimumMetricsToken` characters, since anyone who can reach the port may guess.
        func resolvedMetricsToken() throws -> String? {
            var token: String?
            if let metricsToken {
                printError(
                    "warning: --metrics-token is visible to every user of this machine in 'ps'; prefer --metrics-token-file")
                token = metricsToken
            } else {
                token = try Self.secret(
                    file: metricsTokenFile, flag: "--metrics-token-file", environment: "BREAKING_NEWS_METRICS_TOKEN")
            }
            if let token, token.count < Self.minimumMetricsToken {
                throw CommandFailure.usage(
                    "the metrics token has \(token.count) characters; use at least \(Self.minimumMetricsToken) random ones "
                        + "(openssl rand -hex 16 > metrics-token)")
            }
            return token
        }

        static let minimumMetricsToken = 16

        /// A secret kept out of `ps`: the first line of `file` (given with `flag`), else the
        /// environment variable `environment`; nil when neither has one.
        static func secret(file: String?, flag: String, environment: String) throws -> String? {
            guard let file else { return ProcessInfo.processInfo.environment[environment].flatMap { $0.isEmpty ? nil : $0 } }
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw CommandFailure("cannot read \(flag) \(file)", exitCode: .failure)
            }
            // As ssh does with keys: a secret others may read is no longer one.
            if let mode = (try? FileManager.default.attributesOfItem(atPath: file))?[.posixPermissions] as? Int,
                mode & 0o077 != 0
            {
                throw CommandFailure(
                    "\(file) may be read by other users (mode \(String(mode & 0o777, radix: 8))); "
                        + "make it yours alone: chmod 600 \(file)", exitCode: .failure)
            }
            let secret = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard !secret.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw CommandFailure("\(file) is empty", exitCode: .failure)
            }
            return secret.hasSuffix("\r") ? String(secret.dropLast()) : secret
        }

        func run() async throws {
            let paths = Paths()
            let environmentPort = ProcessInfo.processInfo.environment["BREAKING_NEWS_HUB_PORT"].flatMap(Int.init)
            var configuration = LocalHubConfiguration(
                host: host, port: port ?? environmentPort ?? LocalHubDefaults.port,
                dataDirectory: data.map { URL(fileURLWithPath: $0) } ?? paths.hubDirectory,
                hubs: hubs.isEmpty ? [LocalHubDefaults.hubName] : hubs, tls: tls, logLevel: Logger.Level(rawValue: logLevel)!,
                idleTimeout: idleTimeout.seconds, requestTimeout: requestTimeout.seconds, maximumConnections: maximumConnections,
                maximumInstallationsPerHub: maximumInstallations, maximumBytesPerHub: maximumHubMegabytes << 20,
                providersFile: providersFile.map { URL(fileURLWithPath: $0) },
                storeURL: store
                    ?? ProcessInfo.processInfo.environment["BREAKING_NEWS_HUB_STORE"].flatMap { $0.isEmpty ? nil : $0 },
                nodeName: node,
                clientRates: ClientRates(
                    newDevicesPerHour: newDevicesPerHour, bytesPerHour: megabytesPerHour << 20, streams: clientStreams,
                    connections: clientConnections),
                trustedProxies: try TrustedProxies(trustedProxies), metricsToken: try resolvedMetricsToken())
            configuration.claimLifetime = .seconds(claimLifetime.seconds)
            configuration.retention = RetentionPolicy(
                age: retention.seconds, maximumLogBytes: Int64(deliveryLogMegabytes) << 20,
                installationTTL: installationTTL.seconds == 0 ? nil : installationTTL.seconds)
            configuration.storePassword = try resolvedStorePassword()
            // Everything the hub writes (database, journal, keys, state, certificate) is the
            // owner's alone.
            umask(0o077)
            // A reader of its output that went away (a pipe closed, a terminal gone) must not end
            // the hub at its next log line: the write fails, and the hub serves on.
            signal(SIGPIPE, SIG_IGN)
            if let logFile { try Self.logToFile(logFile, maximumBytes: logFileSize.bytes) }
            var logger = Logger(label: "local-hub")
            logger.logLevel = configuration.logLevel
            do {
                try await LocalHubServer.run(configuration: configuration, logger: logger)
            } catch let error as LocalHubStartError {
                throw CommandFailure(error.description, exitCode: .failure)
            } catch let problem as DatabaseProblem {
                throw CommandFailure.database(problem, doing: "cannot start")
            }
        }
    }
}
