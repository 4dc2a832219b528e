import Foundation
import LocalHubSupport
import NotificationHubs

/// A JSON object kept in one file of a home: read whole, written atomically (owner only),
/// changed under a lock file beside it. A file that is not a JSON object is moved aside as
/// `<name>.corrupt-<time>` — never written over — and said in a warning.
struct KeptJSONObject: Sendable {
    let url: URL
    /// What starting without the file means, for the warning ("the selection starts empty").
    let consequence: String

    var lockURL: URL {
        url.deletingLastPathComponent().appendingPathComponent(
            url.deletingPathExtension().lastPathComponent + ".lock")
    }

    /// The members when the file holds a JSON object; nil when it is missing or holds
    /// anything else. Only reads: nothing is moved.
    func peek() -> [(String, JSONValue)]? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return (try? JSONValue(parsing: data))?.objectMembers
    }

    /// Whether the file is there (even corrupt).
    var exists: Bool { FileManager.default.fileExists(atPath: url.path) }

    /// The members; none for a missing file; none and a warning for a corrupt one, which is
    /// moved aside.
    func read(now: Date = Date(), again: Bool = true) -> (members: [(String, JSONValue)], warning: String?) {
        guard let data = try? Data(contentsOf: url) else { return ([], nil) }
        if let json = try? JSONValue(parsing: data), let members = json.objectMembers { return (members, nil) }
        let stamp = W3CDate.format(now).prefix(19).filter(\.isNumber)
        let aside = url.deletingLastPathComponent().appendingPathComponent("\(url.lastPathComponent).corrupt-\(stamp)")
        do {
            try FileManager.default.moveItem(at: url, to: aside)
            return ([], "\(url.path) was not valid JSON; it was kept as \(aside.lastPathComponent) and \(consequence)")
        } catch {
            // Another process of the home moved it aside a moment before (and says so): what
            // is there now (nothing, or what it restored) is what this one reads.
            if again, (try? Data(contentsOf: url)) != data {
                return read(now: now, again: false)
            }
            return ([], "\(url.path) is not valid JSON and could not be moved aside (\(error.localizedDescription))")
        }
    }

    /// Writes the members (those with a value), atomically.
    func write(_ members: [(String, JSONValue?)]) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try AtomicFile.write(Data((JSONValue.object(dropping: members).text + "\n").utf8), to: url, permissions: 0o600)
    }

    /// Runs `body` holding the file's lock: a change made by another process of the home in
    /// between is neither lost nor overwritten.
    func withLock<T>(_ body: () throws -> T) throws -> T {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        return try FileLock.withExclusive(lockURL, body)
    }
}
