import Foundation
import Glibc
import Synchronization

/// A log file rotated by size, as the hub writes `hub.log`: lines go to the file until it
/// holds `maximumBytes`, then it becomes `FILE.1` (the older ones move up to `FILE.\(kept)`,
/// the oldest is dropped) and a new file begins. The latest lines are always kept, and the
/// files never hold more than `(kept + 1) × (maximumBytes + longestLine)` bytes together.
/// A file already past the size when opened (a hub of an earlier version let it grow) is
/// rotated first.
///
/// When it `carriesStandardStreams`, the process's standard output and error are the
/// current file too, moved with every rotation: what is printed besides the logger (a
/// failure to start, a crash's report) lands beside the log's lines and is rotated with them.
public final class RotatingLogFile: Sendable {
    /// The size at which the hub's log is rotated.
    public static let defaultMaximumBytes = 4 << 20
    /// Files kept besides the current one.
    public static let kept = 3
    /// The longest line written; a longer one is cut.
    public static let longestLine = 64 << 10

    public let url: URL
    public let maximumBytes: Int
    private let carriesStandardStreams: Bool
    /// The current file's descriptor.
    private let descriptor: Mutex<Int32>

    /// Opens (or makes, 0600) the file at `url` for appending, rotating it first when it is
    /// already `maximumBytes` or more.
    public init(url: URL, maximumBytes: Int = defaultMaximumBytes, carriesStandardStreams: Bool) throws {
        self.url = url
        self.maximumBytes = maximumBytes
        self.carriesStandardStreams = carriesStandardStreams
        let opened = try Self.open(url.path)
        descriptor = Mutex(opened)
        if carriesStandardStreams { Self.carry(opened) }
        descriptor.withLock { current in
            if Self.size(current) >= maximumBytes { rotate(&current) }
        }
    }

    deinit {
        descriptor.withLock { _ = close($0) }
    }

    /// The rotated file `n` (1 is the newest of them).
    public static func rotated(_ url: URL, _ n: Int) -> URL {
        url.deletingLastPathComponent().appendingPathComponent("\(url.lastPathComponent).\(n)")
    }

    /// Appends `text` (one or more whole lines), then rotates when the file reached its size.
    public func write(_ text: String) {
        var bytes = Array(text.utf8)
        if bytes.count > Self.longestLine {
            bytes = Array(bytes.prefix(Self.longestLine - 32)) + Array(" … (line cut)\n".utf8)
        }
        descriptor.withLock { current in
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Glibc.write(current, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0, errno == EINTR { continue }
                    guard written > 0 else { return }
                    offset += written
                }
            }
            if Self.size(current) >= maximumBytes { rotate(&current) }
        }
    }

    /// FILE.(kept-1) → FILE.kept, …, FILE → FILE.1, then a new FILE. When the new file cannot
    /// be made, the old one goes on (renamed): lines are never dropped for it.
    private func rotate(_ current: inout Int32) {
        let path = url.path
        for n in stride(from: Self.kept - 1, through: 1, by: -1) {
            _ = rename(Self.rotated(url, n).path, Self.rotated(url, n + 1).path)
        }
        guard rename(path, Self.rotated(url, 1).path) == 0, let fresh = try? Self.open(path) else { return }
        if carriesStandardStreams { Self.carry(fresh) }
        close(current)
        current = fresh
    }

    private static func open(_ path: String) throws -> Int32 {
        let opened = Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard opened >= 0 else {
            throw RotatingLogFileError(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        return opened
    }

    /// Makes standard output and error the file (they keep no close-on-exec flag).
    private static func carry(_ descriptor: Int32) {
        // What stdio holds for the old file goes there first.
        fflush(nil)
        _ = dup2(descriptor, STDOUT_FILENO)
        _ = dup2(descriptor, STDERR_FILENO)
    }

    private static func size(_ descriptor: Int32) -> Int {
        var info = stat()
        return fstat(descriptor, &info) == 0 ? Int(info.st_size) : 0
    }
}

public struct RotatingLogFileError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
