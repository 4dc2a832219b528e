import Foundation

/// A credential file (an APNs `.p8` key, a service account, VAPID keys): read once, only
/// when its owner alone may read it, and never quoted in an error (its path is).
public enum SecretFile {
    /// Larger than any key or service account; a bigger file is not one.
    public static let maximumBytes = 64 << 10

    /// The file's bytes, or why it is refused: missing, a link, not a regular file (a FIFO
    /// is refused without waiting on it), or too large; and with `ownerOnly`, not owned by
    /// this process's user or readable or writable by others (anything but 0600 or 0400).
    public static func read(_ path: String, ownerOnly: Bool = true) throws(SecretFileError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else {
            let code = errno
            if code == ELOOP { throw SecretFileError(path: path, problem: "is a symbolic link; name the file itself") }
            throw SecretFileError(path: path, problem: "cannot be opened (\(String(cString: strerror(code))))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw SecretFileError(path: path, problem: "cannot be examined (\(String(cString: strerror(errno))))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else { throw SecretFileError(path: path, problem: "is not a regular file") }
        let permissions = status.st_mode & 0o777
        guard !ownerOnly || status.st_uid == geteuid() else {
            throw SecretFileError(
                path: path, problem: "belongs to another user (uid \(status.st_uid)); the hub's user must own it")
        }
        guard !ownerOnly || permissions & 0o077 == 0 else {
            throw SecretFileError(
                path: path,
                problem: "may be read or written by others (mode \(String(permissions, radix: 8))); run chmod 600 on it")
        }
        guard Int(status.st_size) <= maximumBytes else {
            throw SecretFileError(path: path, problem: "is larger than \(maximumBytes >> 10) KB")
        }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var filled = 0
        while filled < bytes.count {
            let n = bytes.withUnsafeMutableBytes { buffer in
                Foundation.read(descriptor, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if n < 0, errno == EINTR || errno == EAGAIN { continue }
            guard n > 0 else { throw SecretFileError(path: path, problem: "could not be read to its end") }
            filled += n
        }
        return bytes
    }
}

/// Why a credential file was refused; names the file, never its contents.
public struct SecretFileError: Error, CustomStringConvertible, Sendable, Equatable {
    public let path: String
    public let problem: String
    public var description: String { "the credential file \(path) \(problem)" }
}
