import Foundation

/// An advisory lock (`flock`) on a lock file, held while a read-change-write of files that
/// several processes of one home share (the user defaults, the received log) runs, so no
/// process writes over what another wrote in between.
public enum FileLock {
    /// Runs `body` holding the exclusive lock on `url`, made (0600, with its folder) if
    /// missing. A lock that cannot be opened (a read-only folder) does not stop `body`:
    /// the write that follows reports the real problem.
    public static func withExclusive<T, E: Error>(_ url: URL, _ body: () throws(E) -> T) throws(E) -> T {
        try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let fd = open(url.path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        if fd >= 0 {
            while flock(fd, LOCK_EX) != 0, errno == EINTR {}
        }
        defer {
            if fd >= 0 {
                flock(fd, LOCK_UN)
                close(fd)
            }
        }
        return try body()
    }
}
