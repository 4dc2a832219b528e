import Foundation
import HubTestSupport

/// A private tmux server for driving the terminal UI: sessions, keys, screen captures.
struct Tmux {
    let socket = "bn-test-\(UUID().uuidString.prefix(8))"

    static var isAvailable: Bool { executable != nil }

    static let executable: String? = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/bin/tmux"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Runs one tmux command and returns what it printed. posix_spawn, not Foundation's
    /// Process: the tmux server the first command starts inherits descriptors, and Process
    /// would wait for them to close; here every descriptor but the three standard ones is
    /// closed on exec.
    @discardableResult
    func run(_ arguments: [String]) throws -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("tmux-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        if let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            for name in names {
                guard let fd = Int32(name), fd > 2 else { continue }
                let flags = fcntl(fd, F_GETFD)
                if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
            }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // The test runner's threads block most signals, and blocking (like ignoring) is
        // inherited across exec: a tmux server that blocks SIGTERM cannot `kill-server`.
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
        posix_spawnattr_setflags(&attributes, Int16(0x04 | 0x08))  // SETSIGDEF | SETSIGMASK
        let argv = [Self.executable ?? "/usr/bin/tmux", "-L", socket, "-f", "/dev/null"] + arguments
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, argv[0], &actions, &attributes, cArguments, environ)
        guard status == 0 else { throw TestHubError(description: "cannot run tmux: \(String(cString: strerror(status)))") }
        var exitStatus: Int32 = 0
        waitpid(pid, &exitStatus, 0)
        return (try? String(contentsOf: output, encoding: .utf8)) ?? ""
    }

    /// Starts `command` in a new detached session of the given size; the pane stays after
    /// the command ends, showing `exit=<status>`.
    func start(session: String, command: String, environment: [String: String], columns: Int = 100, rows: Int = 30) throws {
        let exports = environment.map { "\($0.key)=\(shellQuote($0.value))" }.joined(separator: " ")
        let script = "env \(exports) \(command); echo exit=$?; sleep 600"
        try run(["new-session", "-d", "-s", session, "-x", String(columns), "-y", String(rows), script])
    }

    func keys(_ session: String, _ keys: String...) throws {
        try run(["send-keys", "-t", session] + keys)
    }

    /// Types text literally.
    func type(_ session: String, _ text: String) throws {
        try run(["send-keys", "-t", session, "-l", text])
    }

    func capture(_ session: String) throws -> String {
        try run(["capture-pane", "-p", "-t", session])
    }

    func resize(_ session: String, columns: Int, rows: Int) throws {
        try run(["resize-window", "-t", session, "-x", String(columns), "-y", String(rows)])
    }

    /// Waits until the screen satisfies `condition`; returns the last capture.
    @discardableResult
    func waitFor(_ session: String, timeout: Double = 20, _ condition: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var screen = try capture(session)
        while !condition(screen), Date() < deadline {
            usleep(50_000)
            screen = try capture(session)
        }
        guard condition(screen) else { throw TestHubError(description: "the screen never matched; it shows:\n\(screen)") }
        return screen
    }

    func killServer() {
        _ = try? run(["kill-server"])
    }

    private func shellQuote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
}
