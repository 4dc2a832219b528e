import Foundation
import GRDB
import LocalHubSupport
import NotificationHubs

/// A backup file: a SQLite hub database, as a hub's `hub.sqlite` is, with one table more,
/// `backup_info`, saying what it is: the hubs' keys (the key file's text, kept as it was),
/// the epoch of the delivery log it copied, its highest delivery number, when it was made
/// and the format's version. Push-service credentials (`providers.json` and the files it
/// names) and the TLS key are not in it.
public struct HubBackupInfo: Sendable, Equatable {
    /// The version of the file's form that this program writes and reads.
    public static let currentFormat = 1

    public var format: Int
    /// The key file's text (`keys.json`), kept as it was: never read beyond being there.
    public var keys: String
    /// The epoch of the delivery log copied: the restored hub starts a new one.
    public var sourceEpoch: String
    public var highestSequence: Int64
    public var created: Date
    /// `sqlite` or `postgres`: the store it was taken from.
    public var source: String
}

/// A `backup_info` row's columns as read, before any check.
package struct BackupInfoColumns: Sendable, Hashable {
    var format: Int64?
    var keys: String?
    var sourceEpoch: String?
    var highestSequence: Int64?
    var created: String?
    var source: String?

    package init(
        format: Int64?, keys: String?, sourceEpoch: String?, highestSequence: Int64?, created: String?, source: String?
    ) {
        self.format = format
        self.keys = keys
        self.sourceEpoch = sourceEpoch
        self.highestSequence = highestSequence
        self.created = created
        self.source = source
    }
}

extension HubBackupInfo {
    /// The info of the backup `file` from its row: a format this program reads, keys, a
    /// highest number in range (0 for one that is not: the restored log is numbered from its
    /// own rows), the store it came from.
    package static func stored(_ row: BackupInfoColumns, file: String) throws(HubBackupError) -> HubBackupInfo {
        guard let format = row.format else { throw HubBackupError("\(file) is not a hub backup: its backup_info has no format") }
        guard format == Int64(currentFormat) else {
            throw HubBackupError(
                "\(file) is a backup of format \(format), which this program does not read (it reads \(currentFormat))")
        }
        guard let keys = row.keys, !keys.isEmpty else {
            throw HubBackupError("\(file) holds no keys: a hub restored from it could not serve its apps")
        }
        let highest = row.highestSequence.flatMap { StoredRange.sequence.contains($0) ? $0 : nil } ?? 0
        return HubBackupInfo(
            format: Int(format), keys: keys, sourceEpoch: String((row.sourceEpoch ?? "").prefix(64)), highestSequence: highest,
            created: row.created.flatMap(W3CDate.parse) ?? Date(timeIntervalSince1970: 0),
            source: ["sqlite", "postgres"].contains(row.source ?? "") ? row.source! : "unknown")
    }
}

/// What a backup holds, or what a move copied.
public struct HubBackupCounts: Sendable, Equatable {
    public var installations = 0
    public var registrations = 0
    /// Terminal tokens claimed for the built-in push service.
    public var claims = 0
    /// Scheduled sends waiting.
    public var scheduled = 0
    /// Every notification kept, scheduled ones included.
    public var notifications = 0
    public var deliveries = 0
    /// The file's size (a backup), else 0.
    public var bytes: Int64 = 0
    /// Rows left out because they failed the checks a hub makes of what it reads.
    public var skipped = 0

    public init() {}
}

/// A backup file that cannot be used, with the one-line reason.
public struct HubBackupError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Backs a hub up into one file while it serves, checks such a file, and restores it.
public enum HubBackup {
    /// Copies the SQLite hub database at `database`, consistently while a hub writes to it,
    /// with `keys` (the key file's text), into a new file at `destination`, written
    /// atomically with mode 0600 (an existing file is replaced: the caller decides).
    ///
    /// SQLite's online backup (through GRDB) copies every page in one step, inside one read
    /// transaction: in WAL mode the hub's writers go on meanwhile, and the copy is the
    /// database as of one commit. (`VACUUM INTO` would make the same snapshot smaller, but
    /// rebuilds every table and index on the way, costing the serving machine more.)
    public static func backUp(sqlite database: URL, keys: String, to destination: URL) async throws -> (
        HubBackupInfo, HubBackupCounts
    ) {
        try await write(to: destination) { temporary in
            var configuration = Configuration()
            configuration.readonly = true
            configuration.busyMode = .timeout(10)
            let source = try DatabaseQueue(path: database.path, configuration: configuration)
            let copy = try DatabaseQueue(path: temporary.path)
            try source.backup(to: copy)
            try source.close()
            try copy.writeWithoutTransaction { db in
                // One file: no WAL beside it.
                try db.execute(sql: "PRAGMA journal_mode = DELETE")
                try db.inTransaction {
                    let info = HubBackupInfo(
                        format: HubBackupInfo.currentFormat, keys: keys,
                        sourceEpoch: try String.fetchOne(db, sql: "SELECT epoch FROM delivery_counter") ?? "",
                        highestSequence: try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM delivery") ?? 0, created: Date(),
                        source: "sqlite")
                    try stamp(info, in: db)
                    return .commit
                }
            }
            try copy.close()
            return 0
        }
    }

    /// Copies the PostgreSQL hub database of `store` into a new file at `destination` in the
    /// same form as a SQLite hub's backup, from one repeatable-read snapshot (nodes serve
    /// meanwhile), its keys those the database keeps.
    public static func backUp(postgres store: PostgresHubStore, to destination: URL) async throws -> (
        HubBackupInfo, HubBackupCounts
    ) {
        try await write(to: destination) { temporary in
            let copy = try SQLiteHubStore(path: temporary.path)
            let meta = try await store.export(into: copy)
            guard let keys = meta.keys, !keys.isEmpty else {
                try? copy.close()
                throw HubBackupError("the database holds no keys: no node has served it yet")
            }
            try await copy.setEpoch(meta.epoch)
            try await copy.reserveSequence(through: meta.highestSequence)
            let info = HubBackupInfo(
                format: HubBackupInfo.currentFormat, keys: keys, sourceEpoch: meta.epoch,
                highestSequence: meta.highestSequence, created: Date(), source: "postgres")
            try await copy.pool.writeWithoutTransaction { db in
                try db.inTransaction {
                    try stamp(info, in: db)
                    return .commit
                }
            }
            try copy.close()
            // One file, as a SQLite hub's backup is.
            let queue = try DatabaseQueue(path: temporary.path)
            try await queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = DELETE") }
            try queue.close()
            return meta.skipped
        }
    }

    /// Reads and checks a backup file, as a restore would before writing anything: a regular
    /// file, a whole SQLite database that passes SQLite's own check, with a `backup_info` this
    /// program knows and a key set fit to serve (`checkedKeys`). Read from a private copy.
    public static func open(_ file: URL) throws(HubBackupError) -> (HubBackupInfo, HubBackupCounts) {
        do {
            return try withPrivateCopy(of: file) { copy in
                let (info, counts) = try check(copy, shownAs: file.path)
                _ = try checkedKeys(info, file: file)
                return (info, counts)
            }
        } catch let error as HubBackupError {
            throw error
        } catch {
            throw HubBackupError("\(file.path) is not a hub backup: \(oneLine(error))")
        }
    }

    /// Restores the backup `file` into the stopped hub's `folder` as its `hub.sqlite` and
    /// `keys.json` (mode 0600), replacing those there. The hub is rebuilt, never copied: a
    /// new database of this version's schema, every record written through the store as a
    /// move writes it (`HubTransfer`), so nothing of the file but its data survives (no
    /// trigger, view, index or function of it), and a new delivery-log epoch: a receiver that
    /// resumes from a point of the hub backed up is given everything again, and dedupes.
    /// The file is checked first; nothing in the folder changes unless it is a backup with
    /// keys fit to serve. The caller holds the folder's `hub.lock`.
    public static func restore(_ file: URL, into folder: URL) async throws -> (HubBackupInfo, HubBackupCounts) {
        try await HubTransfer.copy(
            backup: file, to: .sqlite(folder.appendingPathComponent("hub.sqlite")), deliveries: true, replacing: true)
    }

    // MARK: - The file

    static func stamp(_ info: HubBackupInfo, in db: Database) throws {
        try db.execute(sql: "DROP TABLE IF EXISTS backup_info")
        try db.execute(
            sql: """
                CREATE TABLE backup_info (
                    format INTEGER NOT NULL, keys TEXT NOT NULL, source_epoch TEXT NOT NULL,
                    highest_seq INTEGER NOT NULL, created TEXT NOT NULL, source TEXT NOT NULL)
                """)
        try db.execute(
            sql: "INSERT INTO backup_info VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [
                info.format, info.keys, info.sourceEpoch, info.highestSequence, W3CDate.format(info.created), info.source,
            ])
    }

    /// Checks the backup at `file`, naming it `path` in what it says.
    static func check(_ file: URL, shownAs path: String? = nil) throws -> (HubBackupInfo, HubBackupCounts) {
        let path = path ?? file.path
        guard let handle = FileHandle(forReadingAtPath: file.path) else {
            throw HubBackupError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        let header = (try? handle.read(upToCount: 100)) ?? Data()
        let size = (try? handle.seekToEnd()).map(Int64.init) ?? 0
        try? handle.close()
        guard header.count == 100, header.prefix(16) == Data("SQLite format 3\u{0}".utf8) else {
            throw HubBackupError("\(path) is not a hub backup: it is not a SQLite database")
        }
        // The size the header promises (page size × page count) must be the file's: a file
        // cut short is refused here, before SQLite reads past its end.
        let bytes = [UInt8](header)
        var pageSize = Int64(bytes[16]) << 8 | Int64(bytes[17])
        if pageSize == 1 { pageSize = 65536 }
        let pages = bytes[28..<32].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        guard pageSize >= 512, pages > 0, pageSize * pages == size else {
            throw HubBackupError(
                "\(path) is not a whole hub backup: it holds \(size) bytes where its header promises \(pageSize * pages) "
                    + "(cut short, or still being written)")
        }
        // A backup is one file (rollback journal); a database in WAL mode is a hub's own,
        // which SQLite would open by writing its -wal and -shm beside it.
        guard bytes[18] == 1, bytes[19] == 1 else {
            throw HubBackupError("\(path) is not a hub backup: it is a database in WAL mode (a hub's own database?)")
        }
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: file.path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            let verdict = try String.fetchAll(db, sql: "PRAGMA quick_check")
            guard verdict == ["ok"] else {
                throw HubBackupError("\(path) is damaged: \(verdict.first.map(oneLine) ?? "SQLite's check failed")")
            }
            guard try db.tableExists("backup_info") else {
                throw HubBackupError("\(path) is not a hub backup: it is a SQLite database without backup_info")
            }
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM backup_info") else {
                throw HubBackupError("\(path) is not a hub backup: its backup_info is empty")
            }
            for table in ["installation", "registration", "notification", "delivery", "meta", "sandbox_device"] {
                guard try db.tableExists(table) else {
                    throw HubBackupError("\(path) is not a hub backup: it has no \(table) table")
                }
            }
            func value<T: DatabaseValueConvertible>(_ column: String) -> T? { try? row.stored(column, as: T.self) }
            let info = try HubBackupInfo.stored(
                BackupInfoColumns(
                    format: value("format"), keys: value("keys"), sourceEpoch: value("source_epoch"),
                    highestSequence: value("highest_seq"), created: value("created"), source: value("source")),
                file: path)
            var counts = HubBackupCounts()
            func count(_ sql: String) throws -> Int { try Int.fetchOne(db, sql: sql) ?? 0 }
            counts.installations = try count("SELECT COUNT(*) FROM installation")
            counts.registrations = try count("SELECT COUNT(*) FROM registration")
            counts.claims = try count("SELECT COUNT(*) FROM sandbox_device")
            counts.scheduled = try count("SELECT COUNT(*) FROM notification WHERE state = 'Scheduled'")
            counts.notifications = try count("SELECT COUNT(*) FROM notification")
            counts.deliveries = try count("SELECT COUNT(*) FROM delivery")
            counts.bytes = size
            return (info, counts)
        }
    }

    /// Writes a backup through `body`, which fills the temporary file it is given and
    /// returns how many rows it left out; then checks it as `open` does, makes it durable and
    /// renames it to `destination`. The file is 0600 before a byte goes in; nothing is left
    /// behind on failure.
    private static func write(to destination: URL, _ body: (URL) async throws -> Int) async throws -> (
        HubBackupInfo, HubBackupCounts
    ) {
        let folder = destination.deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(
            ".\(destination.lastPathComponent).\(ProcessInfo.processInfo.processIdentifier).tmp")
        func clean() {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                try? FileManager.default.removeItem(atPath: temporary.path + suffix)
            }
        }
        clean()
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600])
        else {
            throw HubBackupError("cannot write in \(folder.path): \(String(cString: strerror(errno)))")
        }
        do {
            let skipped = try await body(temporary)
            let (info, checked) = try check(temporary)
            var counts = checked
            counts.skipped = skipped
            try sync(temporary)
            guard rename(temporary.path, destination.path) == 0 else {
                throw HubBackupError("cannot write \(destination.path): \(String(cString: strerror(errno)))")
            }
            return (info, counts)
        } catch {
            clean()
            throw error
        }
    }

    static func sync(_ file: URL) throws {
        let handle = try FileHandle(forUpdating: file)
        defer { try? handle.close() }
        try handle.synchronize()
    }

    static func oneLine(_ error: any Error) -> String { oneLine("\(error)") }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
