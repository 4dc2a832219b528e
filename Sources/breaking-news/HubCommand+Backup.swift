import ArgumentParser
import BreakingNewsKit
import Foundation
import LocalHub
import LocalHubSupport
import Logging
import NewsCommandLine
import NotificationHubs

extension HubCommand {
    /// `breaking-news hub backup FILE`: one file of the hub while it serves, read from its own
    /// database (never over HTTP).
    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy the hub into one file while it serves: installations, registrations, sends, deliveries, keys.",
            discussion: """
                The file (mode 0600) is a SQLite database holding everything the hub keeps and its keys.json, so a hub \
                restored from it keeps working with apps that ship its Listen key: keep it as secret as the keys. It does \
                NOT hold push-service credentials (providers.json and the APNs .p8, FCM service-account and VAPID files \
                it names) nor the TLS certificate and key: keep those yourself. On PostgreSQL (--store) the same file \
                is written from one snapshot of the database while the nodes serve. Restore with 'breaking-news hub \
                restore FILE'. A FILE that exists is refused (exit 1) unless --force.
                """)

        @Argument(help: "The backup file to write.")
        var file: String

        @Flag(help: "Replace FILE if it exists.")
        var force = false

        @OptionGroup var place: HubPlace

        @Flag(help: "Print what was copied as JSON.")
        var json = false

        func run() async throws {
            let destination = URL(fileURLWithPath: file)
            if FileManager.default.fileExists(atPath: destination.path), !force {
                throw CommandFailure("\(file) exists; give --force to replace it", exitCode: .failure)
            }
            let folder = place.folder
            let result: (HubBackupInfo, HubBackupCounts)
            if let url = place.storeURL {
                result = try await HubStoreAccess.withPostgres(url, password: try place.storePassword(), purpose: "backup") {
                    postgres in
                    do {
                        return try await HubBackup.backUp(postgres: postgres, to: destination)
                    } catch {
                        throw CommandFailure("backup failed: \(error)", exitCode: .failure)
                    }
                }
            } else {
                let database = folder.appendingPathComponent("hub.sqlite")
                guard FileManager.default.fileExists(atPath: database.path) else {
                    throw CommandFailure(
                        "no hub database in \(folder.path) (the hub makes it on its first start)", exitCode: .failure)
                }
                let keys = try HubStoreAccess.keyText(in: folder)
                do {
                    result = try await HubBackup.backUp(sqlite: database, keys: keys, to: destination)
                } catch {
                    throw CommandFailure("backup failed: \(error)", exitCode: .failure)
                }
            }
            let (info, counts) = result
            if json {
                say(HubStoreAccess.json(counts, info: info, extra: [("file", .string(destination.path))]).text)
                return
            }
            let skipped = counts.skipped > 0 ? "; left out \(counts.skipped) rows that failed their checks" : ""
            say(
                "backed up \(HubStoreAccess.describe(counts)) and the keys to \(file) "
                    + "(\(HubStoreAccess.megabytes(counts.bytes))); push-service credentials are not in it\(skipped)")
        }
    }

    /// `breaking-news hub restore FILE`: a backup written into a stopped hub's data folder,
    /// or into a PostgreSQL database.
    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Restore a backup into a stopped hub's data folder (or a PostgreSQL database with --store).",
            discussion: """
                Writes hub.sqlite and keys.json (mode 0600) into the data folder; refused while a hub runs there, and \
                when the folder holds a hub already (hub.sqlite or keys.json) unless --force (exit 1). The restored hub \
                starts a new delivery log epoch: terminals resuming from a point of the old hub are given everything \
                again and keep each message once. Push-service credentials and the TLS key are not in a backup: put \
                providers.json and its files back yourself. A file that is not a whole backup is refused (exit 5) and \
                nothing is changed. With --store, the backup goes into a new PostgreSQL database (one that holds a hub \
                is refused unless --force, which replaces it: stop its nodes first).
                """)

        @Argument(help: "The backup file to read.")
        var file: String

        @Flag(help: "Replace the hub the folder (or database) holds.")
        var force = false

        @OptionGroup var place: HubPlace

        @Flag(help: "Print what was restored as JSON.")
        var json = false

        func run() async throws {
            let source = URL(fileURLWithPath: file)
            // Checked before anything is locked or changed: a file that is no backup, or whose
            // keys no hub may serve, changes nothing.
            do {
                _ = try HubBackup.open(source)
            } catch {
                throw CommandFailure(error.description, exitCode: .inputRejected)
            }
            let (info, counts): (HubBackupInfo, HubBackupCounts)
            let restored: String
            if let url = place.storeURL {
                (info, counts) = try await HubStoreAccess.withPostgres(
                    url, password: try place.storePassword(), purpose: "restore"
                ) { postgres in
                    do {
                        return try await HubTransfer.copy(
                            backup: source, to: .postgres(postgres), deliveries: true, replacing: force)
                    } catch let refusal as HubTransferRefusal {
                        throw CommandFailure("\(refusal)", exitCode: .failure)
                    } catch let refusal as HubBackupError {
                        throw CommandFailure(refusal.description, exitCode: .inputRejected)
                    } catch {
                        throw CommandFailure("restore failed: \(error)", exitCode: .failure)
                    }
                }
                restored = PostgresHubStore.redacted(url)
            } else {
                let folder = place.folder
                let lock = try HubStoreAccess.lockStoppedFolder(folder)
                defer { lock.release() }
                let held = ["hub.sqlite", LocalHubKeyFile.fileName].filter {
                    FileManager.default.fileExists(atPath: folder.appendingPathComponent($0).path)
                }
                if !held.isEmpty, !force {
                    throw CommandFailure(
                        "\(folder.path) holds a hub already (\(held.joined(separator: ", "))); give --force to replace it",
                        exitCode: .failure)
                }
                do {
                    (info, counts) = try await HubBackup.restore(source, into: folder)
                } catch let refusal as HubBackupError {
                    throw CommandFailure(refusal.description, exitCode: .inputRejected)
                } catch {
                    throw CommandFailure("restore failed: \(error)", exitCode: .failure)
                }
                restored = folder.path
            }
            if json {
                say(HubStoreAccess.json(counts, info: info, extra: [("into", .string(restored))]).text)
                return
            }
            say(
                "restored \(HubStoreAccess.describe(counts)) and the keys into \(restored), from a backup of "
                    + "\(W3CDate.format(info.created).prefix(19))Z; it starts a new delivery log epoch")
        }
    }

    /// `breaking-news hub migrate --to …`: the hub copied into another store, which nodes (or
    /// a hub on its folder) then serve.
    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy the hub into a new store: a PostgreSQL database nodes serve, or a SQLite file (the way back).",
            discussion: """
                Copies installations, registrations, claimed terminal tokens, notifications (scheduled and unfinished \
                sends among them) and the keys; the delivery log too with --deliveries. The source is the data folder's \
                SQLite database, or the database of --store, read from one snapshot while it serves (stop the source \
                before its nodes move, or writes made after the snapshot stay behind). Each record is checked as a hub \
                checks what it loads. A PostgreSQL destination must be new or empty (its schema is made by the hub's \
                own migrations): one that holds a hub (even only keys) is refused unless --force, which replaces it (stop \
                its nodes first). --to FILE.sqlite writes a new hub database with keys.json beside it: name it \
                DIR/hub.sqlite to make DIR a hub's data folder; an existing one is refused unless --force (exit 1). The \
                destination starts a new delivery log epoch: terminals receive everything again and keep each message \
                once. Push-service credentials are not copied.
                """)

        @Option(
            help: ArgumentHelp(
                "The new store: a PostgreSQL database, or a SQLite file (keys.json goes beside it).",
                valueName: "postgres://user@host:port/database|FILE.sqlite"))
        var to: String

        @Option(
            name: .customLong("to-password-file"),
            help: ArgumentHelp(
                "A file holding the destination database's password (else BREAKING_NEWS_HUB_STORE_PASSWORD when the "
                    + "source is SQLite).", valueName: "file"))
        var toPasswordFile: String?

        @Flag(help: "Copy the delivery log (what terminals have been sent) too.")
        var deliveries = false

        @Flag(help: "Replace the hub the destination holds.")
        var force = false

        @OptionGroup var place: HubPlace

        @Flag(help: "Print what was copied as JSON.")
        var json = false

        var toPostgres: Bool { to.hasPrefix("postgres://") || to.hasPrefix("postgresql://") }

        func validate() throws {
            if to.isEmpty { throw ValidationError("--to needs a postgres:// URL or a file") }
            if !toPostgres, to.contains("://") { throw ValidationError("--to takes a postgres:// URL or a file") }
        }

        func run() async throws {
            let folder = place.folder
            let sourceURL = place.storeURL
            // What the destination refuses is said before any work.
            var destinationLock: DataDirectoryLock?
            defer { destinationLock?.release() }
            let sqliteFile = URL(fileURLWithPath: to)
            if !toPostgres {
                let beside = sqliteFile.deletingLastPathComponent()
                if FileManager.default.fileExists(atPath: beside.appendingPathComponent(LocalHubDefaults.lockFileName).path) {
                    destinationLock = try HubStoreAccess.lockStoppedFolder(beside)
                }
                let held = [sqliteFile, beside.appendingPathComponent(LocalHubKeyFile.fileName)].filter {
                    FileManager.default.fileExists(atPath: $0.path)
                }
                if !held.isEmpty, !force {
                    throw CommandFailure(
                        "\(held.map(\.path).joined(separator: " and ")) exists; give --force to replace it", exitCode: .failure)
                }
            }
            guard toPostgres else { return try await copy(from: folder, sourceURL, into: nil, sqliteFile: sqliteFile) }
            // The environment's password is the source's when the source is a database too.
            let password =
                toPasswordFile != nil || sourceURL == nil
                ? try HubCommand.Serve.secret(
                    file: toPasswordFile, flag: "--to-password-file", environment: "BREAKING_NEWS_HUB_STORE_PASSWORD")
                : nil
            try await HubStoreAccess.withPostgres(to, password: password, purpose: "migrate") {
                destination in
                if !force, (try? await destination.holdsHub()) == true {
                    throw CommandFailure(
                        "the database at \(PostgresHubStore.redacted(to)) holds a hub already (installations, sends or keys); "
                            + "give --force to replace it, its nodes stopped", exitCode: .failure)
                }
                try await copy(from: folder, sourceURL, into: destination, sqliteFile: sqliteFile)
            }
        }

        /// A snapshot of the hub in `folder` (or at `sourceURL`), copied into `destination`, or
        /// into `sqliteFile` when there is none.
        private func copy(from folder: URL, _ sourceURL: String?, into destinationStore: PostgresHubStore?, sqliteFile: URL)
            async throws
        {
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("hub-migrate-\(UUID().uuidString)")
            try FileManager.default.createDirectory(
                at: scratch, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            defer { try? FileManager.default.removeItem(at: scratch) }
            let snapshot = scratch.appendingPathComponent("snapshot.sqlite")
            // One consistent snapshot of the source first: a backup.
            do {
                if let sourceURL {
                    _ = try await HubStoreAccess.withPostgres(sourceURL, password: try place.storePassword(), purpose: "migrate")
                    { postgres in
                        try await HubBackup.backUp(postgres: postgres, to: snapshot)
                    }
                } else {
                    let database = folder.appendingPathComponent("hub.sqlite")
                    guard FileManager.default.fileExists(atPath: database.path) else {
                        throw CommandFailure(
                            "no hub database in \(folder.path) (the hub makes it on its first start)", exitCode: .failure)
                    }
                    _ = try await HubBackup.backUp(sqlite: database, keys: try HubStoreAccess.keyText(in: folder), to: snapshot)
                }
            } catch let failure as CommandFailure {
                throw failure
            } catch {
                throw CommandFailure("reading the hub failed: \(error)", exitCode: .failure)
            }
            let counts: HubBackupCounts
            let place: String
            if let destination = destinationStore {
                do {
                    (_, counts) = try await HubTransfer.copy(
                        backup: snapshot, to: .postgres(destination), deliveries: deliveries, replacing: force)
                } catch let refusal as HubTransferRefusal {
                    throw CommandFailure("\(refusal)", exitCode: .failure)
                } catch {
                    throw CommandFailure("migrate failed: \(error)", exitCode: .failure)
                }
                place = PostgresHubStore.redacted(to)
            } else {
                do {
                    (_, counts) = try await HubTransfer.copy(
                        backup: snapshot, to: .sqlite(sqliteFile), deliveries: deliveries, replacing: force)
                } catch {
                    throw CommandFailure("migrate failed: \(error)", exitCode: .failure)
                }
                place = sqliteFile.path
            }
            if json {
                say(HubStoreAccess.json(counts, info: nil, extra: [("to", .string(place))]).text)
                return
            }
            let skipped = counts.skipped > 0 ? "; left out \(counts.skipped) records that failed their checks" : ""
            say(
                "copied \(HubStoreAccess.describe(counts, deliveries: deliveries)) and the keys to \(place); it starts a new "
                    + "delivery log epoch\(skipped)")
        }
    }
}

extension HubStoreAccess {
    /// `--store`, else `BREAKING_NEWS_HUB_STORE`; nil for the data folder's SQLite database.
    static func storeURL(_ flag: String?) -> String? {
        flag ?? ProcessInfo.processInfo.environment["BREAKING_NEWS_HUB_STORE"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `body` with the PostgreSQL store at `url` for a command, migrated to this version's
    /// schema as a node would, its pool run by a child task for as long as `body` runs.
    static func withPostgres<T>(
        _ url: String, password: String?, purpose: String,
        _ body: (PostgresHubStore) async throws -> T
    ) async throws -> T {
        var logger = Logger(label: "hub-\(purpose)")
        logger.logLevel = .critical
        let store: PostgresHubStore
        do {
            store = try PostgresHubStore(
                url: url,
                password: password,
                node: "\(purpose)-\(ProcessInfo.processInfo.processIdentifier)", logger: logger)
        } catch {
            throw Self.unusable(url, error)
        }
        return try await store.whileRunning {
            do {
                try await store.open()
            } catch {
                throw Self.unusable(url, error)
            }
            return try await body(store)
        }
    }

    private static func unusable(_ url: String, _ error: any Error) -> CommandFailure {
        if let problem = error as? DatabaseProblem { return .database(problem, doing: "cannot use the database") }
        return CommandFailure("cannot use the database at \(PostgresHubStore.redacted(url)): \(error)", exitCode: .hubUnreachable)
    }

    /// The folder's key file as text, kept as it is: only its presence is checked.
    static func keyText(in folder: URL) throws -> String {
        let url = folder.appendingPathComponent(LocalHubKeyFile.fileName)
        guard let data = FileManager.default.contents(atPath: url.path), !data.isEmpty,
            let text = String(data: data, encoding: .utf8)
        else {
            throw CommandFailure("no key file in \(folder.path) (\(LocalHubKeyFile.fileName))", exitCode: .failure)
        }
        return text
    }

    /// Holds `folder`'s hub lock, made private first: refused while a hub runs there.
    static func lockStoppedFolder(_ folder: URL) throws -> DataDirectoryLock {
        do {
            try DataFolder.prepare(folder, files: LocalHubDefaults.dataFiles)
            return try DataDirectoryLock(directory: folder)
        } catch {
            let running = LocalHubState.read(folder.appendingPathComponent(LocalHubState.fileName))
            let detail = running.map { " (pid \($0.pid), \($0.url))" } ?? ""
            throw CommandFailure(
                "a hub is running on \(folder.path)\(detail); stop it first (breaking-news hub stop)", exitCode: .failure)
        }
    }

    /// "3 installations, 2 registrations, 1 scheduled send, 12 deliveries (40 notifications, 2 claimed devices)".
    static func describe(_ counts: HubBackupCounts, deliveries: Bool = true) -> String {
        func plural(_ n: Int, _ word: String) -> String { "\(n) \(word)\(n == 1 ? "" : "s")" }
        let log = deliveries ? ", \(counts.deliveries) deliver\(counts.deliveries == 1 ? "y" : "ies")" : ""
        return "\(plural(counts.installations, "installation")), \(plural(counts.registrations, "registration")), "
            + "\(plural(counts.scheduled, "scheduled send"))\(log) (\(plural(counts.notifications, "notification")), "
            + "\(plural(counts.claims, "claimed device")))"
    }

    static func json(_ counts: HubBackupCounts, info: HubBackupInfo?, extra: [(String, JSONValue)]) -> JSONValue {
        func number(_ n: some BinaryInteger) -> JSONValue { .number(String(n)) }
        return .object(
            extra + [
                ("installations", number(counts.installations)), ("registrations", number(counts.registrations)),
                ("scheduled", number(counts.scheduled)), ("notifications", number(counts.notifications)),
                ("deliveries", number(counts.deliveries)), ("claims", number(counts.claims)),
                ("bytes", number(counts.bytes)), ("skipped", number(counts.skipped)),
            ]
                + (info.map {
                    [
                        ("sourceEpoch", .string($0.sourceEpoch)), ("highestSequence", number($0.highestSequence)),
                        ("created", .string(W3CDate.format($0.created))), ("source", .string($0.source)),
                    ]
                } ?? []))
    }
}
