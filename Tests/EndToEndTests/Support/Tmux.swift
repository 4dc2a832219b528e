import BreakingNewsKit
import Foundation
import HubTestSupport
import LocalHubSupport
import TestTiers

#if canImport(Glibc)
    import Glibc
#endif

/// A private tmux server for driving the terminal UI: sessions, keys, screen captures.
struct Tmux {
    let socket = "bn-test-\(UUID().uuidString.prefix(8))"

    static var isAvailable: Bool { executable != nil }

    static let executable: String? = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/bin/tmux"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Runs one tmux command and returns what it printed. Not Foundation's Process: the
    /// tmux server the first command starts would keep its pipes open, and would inherit
    /// the test runner's blocked signals (then `kill-server`, a SIGTERM to itself, does
    /// nothing); `ChildProcess` starts it clean of both. Waited for off the cooperative pool
    /// (`offThePool`): a busy machine can take a while to run it.
    @discardableResult
    func run(_ arguments: [String]) async throws -> String {
        try TestTier.requireFullSuite("tmux")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("tmux-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let argv = [Self.executable ?? "/usr/bin/tmux", "-L", socket, "-f", "/dev/null"] + arguments
        try await offThePool { try ChildProcess.run(argv, standardOutput: output.path) }
        return (try? String(contentsOf: output, encoding: .utf8)) ?? ""
    }

    /// Starts `command` in a new detached session of the given size; the pane stays after
    /// the command ends, showing `exit=<status>`.
    func start(session: String, command: String, environment: [String: String], columns: Int = 100, rows: Int = 30) async throws {
        let exports = environment.map { "\($0.key)=\(shellQuote($0.value))" }.joined(separator: " ")
        let script = "env \(exports) \(command); echo exit=$?; sleep 600"
        try await run(["new-session", "-d", "-s", session, "-x", String(columns), "-y", String(rows), script])
    }

    /// Presses keys one at a time, as a person does: each is sent once the program has read
    /// the one before (`drained`). Sent at once, printable keys are a burst the program sets
    /// aside (a paste, keys typed ahead): `burst` sends them so.
    func keys(_ session: String, _ keys: String...) async throws {
        for key in keys {
            try await run(["send-keys", "-t", session, key])
            try await drained(session)
            // Having read an Escape, curses waits ESCDELAY (25 ms here) for a byte that would
            // make it Alt with that key: the next key waits past it, or Escape then Space is
            // read as Alt-Space on a busy machine.
            if key == "Escape" { try await Task.sleep(for: .milliseconds(150)) }
        }
    }

    /// Sends `keys` in one go: the program finds them all waiting at once.
    func burst(_ session: String, _ keys: String...) async throws {
        try await run(["send-keys", "-t", session] + keys)
        try await drained(session)
    }

    /// Types text literally, in one go (a text field takes it whole; elsewhere it is a burst).
    func type(_ session: String, _ text: String) async throws {
        try await run(["send-keys", "-t", session, "-l", text])
        try await drained(session)
    }

    /// Waits until the program in `session` has read everything sent to its terminal: the
    /// pane's terminal holds no input (FIONREAD on it), then a moment more, so the next key
    /// is not found waiting beside the last one. tmux has written a key into the terminal by
    /// the time `send-keys` returns.
    func drained(_ session: String, timeout: Double = 20) async throws {
        let tty = try await run(["display-message", "-p", "-t", session, "#{pane_tty}"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard tty.hasPrefix("/dev/") else { return }
        let descriptor = open(tty, O_RDONLY | O_NOCTTY | O_NONBLOCK)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var waiting: Int32 = 0
            guard ioctl(descriptor, UInt(FIONREAD), &waiting) == 0 else { return }
            if waiting == 0 { break }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        try await Task.sleep(nanoseconds: 20_000_000)
    }

    func capture(_ session: String) async throws -> String {
        try await run(["capture-pane", "-p", "-t", session])
    }

    func resize(_ session: String, columns: Int, rows: Int) async throws {
        try await run(["resize-window", "-t", session, "-x", String(columns), "-y", String(rows)])
    }

    /// Waits until the screen satisfies `condition`; returns the capture that did.
    ///
    /// A capture can catch a frame half drawn: the program's output reaches tmux in pieces
    /// (the terminal driver writes it a run at a time), so the title of a new frame can show
    /// beside the old frame's last rows. What the caller asserts beyond `condition` must be
    /// of the same frame, so a match is looked at again a moment later and the screen
    /// returned is one seen twice alike; a match gone by then (a passing state) is returned
    /// as it was seen. An assertion that must hold, all the same, belongs in `condition`.
    @discardableResult
    func waitFor(_ session: String, timeout: Double = 20, _ condition: (String) -> Bool) async throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var screen = try await capture(session)
        while true {
            if condition(screen) {
                try await Task.sleep(nanoseconds: 50_000_000)
                let again = try await capture(session)
                if again == screen || !condition(again) || Date() >= deadline { return screen }
                screen = again
                continue
            }
            guard Date() < deadline else {
                throw TestHubError(description: "the screen never matched; it shows:\n\(screen)")
            }
            try await Task.sleep(nanoseconds: 50_000_000)
            screen = try await capture(session)
        }
    }

    /// Asks the server to end, without waiting (for `defer`): the command's own reaper thread
    /// collects it.
    func killServer() {
        let argv = [Self.executable ?? "/usr/bin/tmux", "-L", socket, "-f", "/dev/null", "kill-server"]
        guard let command = try? ChildProcess.start(argv) else { return }
        close(command.standardOutput)
        close(command.standardError)
    }

    private func shellQuote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
}

extension Tmux {
    /// Whether a window has settled with its hub: online, or (a home that never subscribed)
    /// told that the hub does not know it (not registered).
    static func settled(_ screen: String, online: String = "● online") -> Bool {
        // A narrow header cuts the sentence after its start.
        screen.contains(online) || screen.contains("not registered: news")
    }

    /// Starts the UI of `user`'s home on its own embedded hub (no connection string), in a
    /// new session with `extra` in its environment, and waits until it has settled
    /// (`settled`); returns that screen. The caller stops the hub (`hub stop`) and the tmux
    /// server.
    @discardableResult
    func startUIOnItsOwnHub(
        _ session: String, of user: Command, extra: [String: String] = [:], columns: Int = 100, rows: Int = 30,
        online: String = "● online"
    ) async throws -> String {
        var environment = user.environment.filter { $0.key.hasPrefix("BREAKING_NEWS_") }
        environment["TERM"] = "screen"
        environment.merge(extra) { $1 }
        try await start(session: session, command: builtBinary().path, environment: environment, columns: columns, rows: rows)
        return try await waitFor(session) { Tmux.settled($0, online: online) }
    }
}
