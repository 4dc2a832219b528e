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
        markDescriptorsCloseOnExec()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
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

    /// Marks every descriptor above standard error close-on-exec, so no child keeps one.
    private static func markDescriptorsCloseOnExec() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for name in names {
            guard let fd = Int32(name), fd > 2 else { continue }
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }
}

public struct ChildProcessError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
