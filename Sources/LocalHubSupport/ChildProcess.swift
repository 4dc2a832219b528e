import Foundation
import Synchronization

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
    ///     error is `/dev/null`.
    ///   - environment: its environment; this process's when nil.
    ///   - input: the reading end of a pipe for its standard input (`/dev/null` when nil).
    @discardableResult
    public static func run(
        _ argv: [String], newSession: Bool = false, standardOutput: String? = nil, environment: [String: String]? = nil,
        input: Int32? = nil
    ) throws -> Int32 {
        let pid = try spawn(
            argv, newSession: newSession, ownGroup: false, environment: environment, directory: nil,
            output: .file(standardOutput ?? "/dev/null"), error: .file("/dev/null"),
            input: input.map(Sink.descriptor) ?? .file("/dev/null"))
        return Running.exitCode(of: Running.reap(pid))
    }

    /// Runs `argv` (an absolute path first) on this process's terminal and waits for it, as
    /// a program the user asked for runs: its standard output and error are this process's,
    /// its standard input too, or the reading end `input` when given. It stays in this
    /// process's group, the terminal's foreground, so a full-screen program can read keys.
    /// Returns its exit status (or the signal that ended it).
    @discardableResult
    public static func runInForeground(_ argv: [String], input: Int32? = nil, environment: [String: String]? = nil) throws
        -> Int32
    {
        let pid = try spawn(
            argv, newSession: false, ownGroup: false, environment: environment, directory: nil, output: .inherited,
            error: .inherited, input: input.map(Sink.descriptor) ?? .inherited)
        return Running.exitCode(of: Running.reap(pid))
    }

    /// The program `name` names, as a shell finds it: `name` itself when it holds a `/`, else
    /// the first executable file of that name in the folders of `searchPath` (`PATH`).
    public static func executable(named name: String, searchPath: String?) -> String? {
        guard !name.isEmpty else { return nil }
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        for folder in (searchPath ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") where !folder.isEmpty {
            let candidate = "\(folder)/\(name)"
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isFolder), !isFolder.boolValue,
                FileManager.default.isExecutableFile(atPath: candidate)
            {
                return candidate
            }
        }
        return nil
    }

    /// Where a child's standard input, output or error is.
    enum Sink {
        case file(String)
        case descriptor(Int32)
        /// This process's own.
        case inherited
    }

    /// Starts `argv` (an absolute path first) in the background, its standard output and error
    /// in pipes this process reads, standard input `/dev/null`. A thread of its own waits for
    /// it, so it never stays a zombie.
    public static func start(
        _ argv: [String], environment: [String: String]? = nil, directory: String? = nil
    ) throws -> Running {
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        guard pipe(&outPipe) == 0 else { throw ChildProcessError(description: "cannot make a pipe") }
        guard pipe(&errPipe) == 0 else {
            outPipe.forEach { close($0) }
            throw ChildProcessError(description: "cannot make a pipe")
        }
        // Children started elsewhere must not hold them (ours close all but 0–2 anyway).
        for fd in outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer {
            // The child has its own copies; ours would keep the pipes from ever ending.
            close(outPipe[1])
            close(errPipe[1])
        }
        do {
            let pid = try spawn(
                argv, newSession: false, ownGroup: false, environment: environment, directory: directory,
                output: .descriptor(outPipe[1]), error: .descriptor(errPipe[1]))
            return Running(pid: pid, standardOutput: outPipe[0], standardError: errPipe[0], group: false)
        } catch {
            close(outPipe[0])
            close(errPipe[0])
            throw error
        }
    }

    /// Starts `argv` (an absolute path first) in the background in a process group of its own,
    /// its standard output and error this process's (a command the user gave, whose output is
    /// theirs), standard input `/dev/null`. `signal` reaches the whole group: a shell and the
    /// programs it runs.
    public static func startSharingOutput(_ argv: [String], environment: [String: String]? = nil) throws -> Running {
        let pid = try spawn(
            argv, newSession: false, ownGroup: true, environment: environment, directory: nil, output: .inherited,
            error: .inherited)
        return Running(pid: pid, standardOutput: -1, standardError: -1, group: true)
    }

    /// A child started in the background.
    public final class Running: Sendable {
        public let pid: pid_t
        /// The reading ends of its standard output and error; the reader closes them. -1 when
        /// it shares this process's.
        public let standardOutput: Int32
        public let standardError: Int32
        /// Whether it leads a process group of its own, which `signal` reaches whole.
        private let group: Bool
        private let status = Mutex<Int32?>(nil)

        init(pid: pid_t, standardOutput: Int32, standardError: Int32, group: Bool) {
            self.pid = pid
            self.standardOutput = standardOutput
            self.standardError = standardError
            self.group = group
            let thread = Thread { [self] in
                let raw = Self.reap(pid)
                status.withLock { $0 = raw }
            }
            thread.name = "child reaper"
            thread.start()
        }

        public var isRunning: Bool { status.withLock { $0 == nil } }

        /// Its exit code, or the number of the signal that ended it; nil while it runs.
        public var exitStatus: Int32? { status.withLock { $0.map(Self.exitCode) } }

        /// Sends it `signal` (SIGTERM by default) unless it has ended; to its whole process
        /// group when it has one of its own.
        public func signal(_ signal: Int32 = SIGTERM) {
            status.withLock { if $0 == nil { _ = kill(group ? -pid : pid, signal) } }
        }

        /// Blocks until it has ended; returns `exitStatus`.
        @discardableResult
        public func waitUntilExit() -> Int32 {
            while true {
                if let code = exitStatus { return code }
                usleep(2_000)
            }
        }

        static func reap(_ pid: pid_t) -> Int32 {
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0, errno == EINTR {}
            return raw
        }

        /// The exit code of a wait status, or the signal that ended the child.
        static func exitCode(of raw: Int32) -> Int32 {
            let signalNumber = raw & 0x7f
            return signalNumber == 0 ? (raw >> 8) & 0xff : signalNumber
        }
    }

    private static func spawn(
        _ argv: [String], newSession: Bool, ownGroup: Bool, environment: [String: String]?, directory: String?, output: Sink,
        error: Sink, input: Sink = .file("/dev/null")
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Pipes first (they are above 2 and would be closed with the rest), then the rest.
        for (fd, sink) in [(Int32(0), input), (1, output), (2, error)] {
            switch sink {
            case .descriptor(let source): posix_spawn_file_actions_adddup2(&actions, source, fd)
            case .file(let path) where fd == 0: posix_spawn_file_actions_addopen(&actions, fd, path, O_RDONLY, 0)
            case .file(let path): posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            case .inherited: break
            }
        }
        closeInheritedDescriptors(&actions)
        if let directory {
            guard let addChdir = addChdir else {
                throw ChildProcessError(description: "cannot run \(argv[0]) in \(directory): no posix_spawn chdir")
            }
            _ = addChdir(&actions, directory)
        }

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
        // Group 0: the child's own pid.
        posix_spawnattr_setpgroup(&attributes, 0)
        // POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK, POSIX_SPAWN_SETSID and POSIX_SPAWN_SETPGROUP.
        posix_spawnattr_setflags(&attributes, Int16(0x04 | 0x08 | (newSession ? 0x80 : 0) | (ownGroup ? 0x02 : 0)))

        var pid: pid_t = 0
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        let status: Int32
        if let environment {
            let cEnvironment = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { cEnvironment.forEach { free($0) } }
            status = posix_spawn(&pid, argv[0], &actions, &attributes, cArguments, cEnvironment)
        } else {
            status = posix_spawn(&pid, argv[0], &actions, &attributes, cArguments, environ)
        }
        guard status == 0 else {
            throw ChildProcessError(description: "cannot run \(argv[0]): \(String(cString: strerror(status)))")
        }
        return pid
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
        for fd in LocalProcess.openDescriptors() where fd > 2 && fcntl(fd, F_GETFD) >= 0 {
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

extension ChildProcess {
    /// glibc's `posix_spawn_file_actions_addchdir_np` (2.29 and later), which Swift's Glibc
    /// module does not show.
    fileprivate static let addChdir:
        (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32)? = {
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else {
                return nil
            }
            return unsafeBitCast(
                symbol,
                to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32).self)
        }()
}

public struct ChildProcessError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
