import Foundation
import Synchronization

/// The one file lock of the project: an exclusive advisory lock (`flock`) on a file or a
/// folder, held until `release` (or until the process ends, however it ends: the kernel
/// lets it go). It keeps one hub to a data folder, one key change to a folder at a time, and
/// the read-change-write of files that several processes of one home share (the user
/// defaults, the received log) whole, so no process writes over what another wrote.
public final class FileLock: Sendable {
    /// Why a lock was not taken.
    public struct Failure: Error, CustomStringConvertible {
        /// Whether another holder has it (only when not waiting); else it could not be opened or taken.
        public let isHeld: Bool
        public let description: String
    }

    private let descriptor: Mutex<Int32?>

    /// Takes the lock on the file at `url`, made (mode 0600) if missing. `waiting`: until
    /// another holder lets it go; otherwise a lock held elsewhere is a `Failure` whose
    /// `isHeld` is true.
    public convenience init(file url: URL, waiting: Bool) throws(Failure) {
        try self.init(path: url.path, flags: O_CREAT | O_RDWR, waiting: waiting)
    }

    /// Takes the lock of the folder at `url` itself (which must exist), as `init(file:)` does.
    public convenience init(folder url: URL, waiting: Bool) throws(Failure) {
        try self.init(path: url.path, flags: O_RDONLY | O_DIRECTORY, waiting: waiting)
    }

    private init(path: String, flags: Int32, waiting: Bool) throws(Failure) {
        let fd = open(path, flags | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw Failure(isHeld: false, description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        let operation = LOCK_EX | (waiting ? 0 : LOCK_NB)
        var taken = flock(fd, operation)
        while taken != 0, errno == EINTR { taken = flock(fd, operation) }
        guard taken == 0 else {
            let error = errno
            close(fd)
            throw Failure(isHeld: error == EWOULDBLOCK, description: "cannot lock \(path): \(String(cString: strerror(error)))")
        }
        descriptor = Mutex(fd)
    }

    /// Lets the lock go; a second call does nothing.
    public func release() {
        guard
            let fd = descriptor.withLock({ held in
                defer { held = nil }
                return held
            })
        else { return }
        flock(fd, LOCK_UN)
        close(fd)
    }

    deinit { release() }

    /// Runs `body` holding the exclusive lock on `url`, made (0600, with its folder) if
    /// missing. A lock that cannot be opened (a read-only folder) does not stop `body`:
    /// the write that follows reports the real problem.
    public static func withExclusive<T, E: Error>(_ url: URL, _ body: () throws(E) -> T) throws(E) -> T {
        try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let lock = try? FileLock(file: url, waiting: true)
        defer { lock?.release() }
        return try body()
    }
}
