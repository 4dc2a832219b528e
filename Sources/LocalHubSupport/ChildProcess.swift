import Foundation

/// Starting a program with posix_spawn, clean of what this process carries: no descriptor
/// but the standard three, default handling of the usual signals, nothing blocked. Foundation's
/// Process would leave a long-lived child (a hub, a tmux server) holding our pipes, and a
/// child inherits ignored and blocked signals across exec: one that blocks SIGTERM cannot be
/// stopped by it.
public enum ChildProcess {
    /// Starts `argv` (an absolute path first) and waits for it; returns its exit status.
    /// - Parameters:
    ///   - newSession: run it in a session of its own (no controlling terminal).
    ///   - standardOutput: a file for its standard output; `/dev/null` when nil. Standard
    ///     input and error are `/dev/null`.
    @discardableResult
    public static func run(_ argv: [String], newSession: Bool = false, standardOutput: String? = nil) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        closeInheritedDescriptors(&actions)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(
            &actions, 1, standardOutput ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signalNumber in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signalNumber) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        // POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK, and POSIX_SPAWN_SETSID.
        posix_spawnattr_setflags(&attributes, Int16(0x04 | 0x08 | (newSession ? 0x80 : 0)))

        var pid: pid_t = 0
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        let status = posix_spawn(&pid, argv[0], &actions, &attributes, cArguments, environ)
        guard status == 0 else {
            throw ChildProcessError(description: "cannot run \(argv[0]): \(String(cString: strerror(status)))")
        }
        var exitStatus: Int32 = 0
        _ = waitpid(pid, &exitStatus, 0)
        return exitStatus
    }

    /// Closes every descriptor above standard error in the child only. This process's own
    /// descriptors are left as they are: marking them close-on-exec here would race with
    /// other threads starting children (Foundation's Process hands each child a socket it
    /// must keep, and a child that loses it is taken for dead).
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        if let closeFrom = addCloseFrom {
            _ = closeFrom(&actions, 3)
            return
        }
        // An older C library: close, in the child, what is open now.
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for name in open {
            guard let fd = Int32(name), fd > 2, fcntl(fd, F_GETFD) >= 0 else { continue }
            posix_spawn_file_actions_addclose(&actions, fd)
        }
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's
    /// Glibc module does not show.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            return nil
        }
        return unsafeBitCast(
            symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()
}

public struct ChildProcessError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
