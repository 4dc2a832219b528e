import Foundation

/// A folder that holds what only its owner may read: a hub's keys, database and state, a
/// user's defaults and received log.
public enum DataFolder {
    /// Creates `url` (and its parents) when needed and makes it readable and writable by
    /// the owner only (0700), and the named `files` in it 0600 (a folder given with `--data`
    /// may have been made with wider rights). Nothing else in the folder is touched: it may
    /// hold the user's own files.
    public static func prepare(_ url: URL, files: [String]) throws {
        // mkdir, one part at a time: one line with the system's reason (a read-only disk, a
        // file in the way), where Foundation's error is a dump of its user info.
        var path = ""
        for part in url.standardizedFileURL.path.split(separator: "/") {
            path += "/" + part
            guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
                throw AtomicFileError(description: "cannot make \(path): \(String(cString: strerror(errno)))")
            }
        }
        var made = stat()
        guard stat(url.path, &made) == 0, made.st_mode & S_IFMT == S_IFDIR else {
            throw AtomicFileError(description: "cannot make \(url.path): something that is not a folder is in the way")
        }
        guard chmod(url.path, 0o700) == 0 else {
            throw AtomicFileError(description: "cannot make \(url.path) private: \(String(cString: strerror(errno)))")
        }
        for name in files {
            let path = url.appendingPathComponent(name).path
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 != 0 else { continue }
            _ = chmod(path, 0o600)
        }
    }

    /// Removes what an earlier process left: the temporary files of `AtomicFile` writes of
    /// the named `files` it never finished (`.<name>.<pid>.tmp`), and the `stale` files
    /// (a state file whose process is gone).
    public static func removeLeftovers(in url: URL, of files: [String], stale: [String] = []) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [] {
            let unfinished = name.hasSuffix(".tmp") && files.contains { name.hasPrefix(".\($0).") }
            if unfinished || stale.contains(name) {
                try? FileManager.default.removeItem(at: url.appendingPathComponent(name))
            }
        }
    }
}
