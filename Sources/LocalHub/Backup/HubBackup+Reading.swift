import Foundation
import GRDB
import LocalHubSupport
import NotificationHubs

/// What a backup file is read as before anything of it is trusted: a private copy of a regular
/// file, stripped of everything but its tables, with a key set checked as a start checks one.
extension HubBackup {
    /// The backup's key set, checked where it enters as a start checks `keys.json`
    /// (`LocalHubKeyFile.Contents.problems`: key lengths, names, rights, the default Listen
    /// rule granting Listen only), upgraded as a hub reads it.
    package static func checkedKeys(_ info: HubBackupInfo, file: URL) throws(HubBackupError) -> LocalHubKeyFile.Contents {
        guard var keys = LocalHubKeyFile.decode(info.keys.utf8).map(HubKeys.init(contents:)) else {
            throw HubBackupError("\(file.path) holds keys that are not a key file: a hub restored from it could not start")
        }
        _ = keys.completed(hubs: [])
        let problems = keys.contents.problems()
        guard problems.isEmpty else {
            throw HubBackupError("\(file.path) holds keys no hub may serve: " + problems.joined(separator: "; "))
        }
        return keys.contents
    }

    /// Runs `body` with a private copy of `file` (`copyRegularFile`) in a folder of its own,
    /// removed after.
    static func withPrivateCopy<T>(of file: URL, _ body: (URL) async throws -> T) async throws -> T {
        let scratch = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let copy = scratch.appendingPathComponent("backup.sqlite")
        try copyRegularFile(file, to: copy)
        return try await body(copy)
    }

    static func withPrivateCopy<T>(of file: URL, _ body: (URL) throws -> T) throws -> T {
        let scratch = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let copy = scratch.appendingPathComponent("backup.sqlite")
        try copyRegularFile(file, to: copy)
        return try body(copy)
    }

    /// A new folder only this user may enter, under the temporary folder.
    static func scratchFolder() throws -> URL {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("hub-backup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: scratch, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return scratch
    }

    /// Removes what a backup's schema holds besides its tables, from a private copy read as
    /// data: triggers (which would fire as the copy is read and migrated) and views, and the
    /// backup's own table. Reading it then runs nothing the file's author wrote.
    static func strip(_ copy: URL) throws {
        let queue = try DatabaseQueue(path: copy.path)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in
            // SQL functions in what is left run as data only.
            try db.execute(sql: "PRAGMA trusted_schema = OFF")
            try db.inTransaction {
                let objects = try Row.fetchAll(
                    db, sql: "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view') ORDER BY type")
                for object in objects {
                    let (type, name): (String, String) = (try object.required("type"), try object.required("name"))
                    let quoted = "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                    try db.execute(sql: "DROP \(type == "trigger" ? "TRIGGER" : "VIEW") IF EXISTS \(quoted)")
                }
                try db.execute(sql: "DROP TABLE IF EXISTS backup_info")
                return .commit
            }
        }
    }

    /// Copies `file` to `destination`, made 0600 before anything is written into it, reading
    /// it once through one descriptor opened without waiting: only a regular file is read (a
    /// FIFO, a device or a folder is refused at once, never waited on), and what is read is
    /// the file checked, whatever its name points to meanwhile.
    static func copyRegularFile(_ file: URL, to destination: URL) throws {
        let input = Foundation.open(file.path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard input >= 0 else {
            throw HubBackupError("cannot read \(file.path): \(String(cString: strerror(errno)))")
        }
        defer { close(input) }
        var status = stat()
        guard fstat(input, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw HubBackupError("\(file.path) is not a hub backup: it is not a regular file")
        }
        guard FileManager.default.createFile(atPath: destination.path, contents: nil, attributes: [.posixPermissions: 0o600])
        else {
            throw HubBackupError("cannot write \(destination.path): \(String(cString: strerror(errno)))")
        }
        let output = try FileHandle(forWritingTo: destination)
        defer { try? output.close() }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw HubBackupError("cannot read \(file.path): \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            try output.write(contentsOf: buffer[..<count])
        }
        try output.synchronize()
    }
}
