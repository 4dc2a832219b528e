import Foundation
import LocalHubSupport
import NotificationHubs

/// The local hub every terminal of a user shares: found through the state file in its data
/// folder, started in the background when none answers, stopped only by `hub stop`.
public struct EmbeddedHub: Sendable {
    public let directory: URL
    /// The port a newly started hub listens on (0 lets it pick; the state file tells).
    public let port: Int
    public let hubName: String
    /// The executable to start as `hub serve`.
    public let executable: String
    /// How long a newly started hub has to answer.
    public let startTimeout: Duration
    /// Told when `ensureRunning` started a hub and it answers (the screen says so).
    public var onStart: (@Sendable () -> Void)?

    public init(
        paths: Paths, port: Int? = nil, hubName: String = LocalHubDefaults.hubName,
        environment: [String: String] = ProcessInfo.processInfo.environment, executable: String? = nil,
        startTimeout: Duration = .seconds(15)
    ) {
        self.init(
            directory: paths.hubDirectory, port: port, hubName: hubName, environment: environment, executable: executable,
            startTimeout: startTimeout)
    }

    /// The hub of the data folder `directory`: a home's (`init(paths:)`) or a node's.
    public init(
        directory: URL, port: Int? = nil, hubName: String = LocalHubDefaults.hubName,
        environment: [String: String] = ProcessInfo.processInfo.environment, executable: String? = nil,
        startTimeout: Duration = .seconds(15)
    ) {
        self.directory = directory
        self.port = port ?? environment["BREAKING_NEWS_HUB_PORT"].flatMap(Int.init) ?? LocalHubDefaults.port
        self.hubName = hubName
        self.executable = executable ?? Self.commandLineTool
        self.startTimeout = startTimeout
    }

    /// The `breaking-news` executable: this process, or its sibling when this is the
    /// terminal UI's own program (`breaking-news-ui`), which has no hub in it.
    public static var commandLineTool: String {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        guard me.lastPathComponent == "breaking-news-ui" else { return me.path }
        return me.deletingLastPathComponent().appendingPathComponent("breaking-news").path
    }

    public var stateFile: URL { directory.appendingPathComponent(LocalHubDefaults.stateFileName) }
    public var keyFile: URL { directory.appendingPathComponent(LocalHubDefaults.keyFileName) }
    public var logFile: URL { directory.appendingPathComponent(LocalHubDefaults.logFileName) }

    /// The state file of the hub that last started here, if any. Not to be trusted as it is:
    /// see `running()`.
    public func state() -> LocalHubState? { LocalHubState.read(stateFile) }

    /// The running hub, when its state file names one that proves it is ours (`LocalHubTrust`).
    public func running() async -> LocalHubState? {
        try? await verified()
    }

    /// The running hub, or why the state file is not trusted; `nil` reason means no file.
    public func verified() async throws(LocalHubTrust.Distrust) -> LocalHubState? {
        guard let state = state() else { return nil }
        return try await LocalHubTrust.verify(state)
    }

    /// Whether the hub of this folder crashed: its state file outlived its process. A hub
    /// stopped on purpose (`hub stop`, a signal) removes the file as it goes.
    public var crashed: Bool {
        guard let state = state() else { return false }
        return !LocalProcess.isAlive(state.pid)
    }

    /// Who holds this folder's port, when it is not this folder's hub: the hub of another
    /// folder, or another program. Nil when the port is free or ours, or when the system
    /// picks it (0).
    public func portHolder() -> PortHolder? {
        guard let holder = PortHolder.find(port: port), !holder.isHub(of: directory) else { return nil }
        return holder
    }

    /// What to say when `holder` keeps this folder's hub from its port: who, and what to do.
    public func portTaken(by holder: PortHolder) -> EmbeddedHubError {
        let other =
            holder.hubDirectory == nil
            ? "" : ", or use that hub through its connection strings ('breaking-news hub connection-strings' in its home)"
        return EmbeddedHubError(
            description:
                "\(holder); this home's hub cannot listen there: set BREAKING_NEWS_HUB_PORT to another port (0 picks a "
                + "free one)\(other)")
    }

    /// The running hub, starting one in the background first when none answers.
    /// A hub that is alive and holds its port but is slow to answer is waited for, not
    /// started twice. A port held by another folder's hub or another program is said at
    /// once: no hub of this folder could listen there.
    public func ensureRunning() async throws -> LocalHubState {
        let deadline = ContinuousClock.now + startTimeout
        var started = false
        while true {
            // Stale, missing, or not ours: a hub of our own is started (the data folder's lock
            // keeps it to one). Alive and listening but silent: it is starting or busy.
            var needsStart = true
            do {
                if let state = try await verified() {
                    if started { onStart?() }
                    return state
                }
            } catch  where error.kind == .silent {
                needsStart = false
            } catch  where error.kind == .legacy {
                // A hub of an earlier version holds the folder's lock: it makes way.
                if let state = state() { await Self.terminate(state) }
            } catch {}
            if needsStart, let holder = portHolder() { throw portTaken(by: holder) }
            guard ContinuousClock.now < deadline else { break }
            if needsStart, !started {
                try DataFolder.prepare(directory, files: LocalHubDefaults.dataFiles)
                try startDetached()
                started = true
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let tail =
            (try? String(contentsOf: logFile, encoding: .utf8))?.split(separator: "\n").suffix(3).joined(separator: "\n") ?? ""
        throw EmbeddedHubError(
            description: "the local hub did not start within \(startTimeout.components.seconds) s (log: \(logFile.path))"
                + (tail.isEmpty ? "" : ":\n\(tail)"))
    }

    /// Starts `hub serve` in its own session, detached from this terminal, logging to the
    /// data folder: the hub writes `hub.log` itself, rotated by size; what is printed before
    /// it opens the file (a command line it refuses) is appended by the shell.
    func startDetached() throws {
        let arguments = [
            executable, "hub", "serve", "--data", directory.path, "--port", String(port), "--hub", hubName, "--log-file",
            logFile.path,
        ]
        let script = "exec \"$0\" \"$@\" </dev/null >>\(Self.shellQuote(logFile.path)) 2>&1 &"
        try Self.spawnDetached(["/bin/sh", "-c", script] + arguments)
    }

    static func shellQuote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// Runs `argv` in a new session and waits for it (the shell backgrounds the real
    /// process and exits at once, so the hub is re-parented and outlives us). No descriptor
    /// of ours reaches the hub: a parent that watches our pipes (a shell, a test runner)
    /// must see them close when we exit, not when the hub does.
    static func spawnDetached(_ argv: [String]) throws {
        do {
            try ChildProcess.run(argv, newSession: true)
        } catch {
            throw EmbeddedHubError(description: "cannot start the local hub: \(error)")
        }
    }

    /// The hub's keys: rule name → key, for this hub.
    public func keys() throws -> [String: String] {
        guard FileManager.default.fileExists(atPath: keyFile.path) else {
            throw EmbeddedHubError(
                description: "the local hub has no keys yet at \(keyFile.path); start it with 'breaking-news hub serve'")
        }
        // Read at every call: a terminal follows a rotation of the keys (`hub keys
        // regenerate`) without a restart. Clients sign with each rule's primary key.
        guard let keys = try LocalHubKeyFile.read(keyFile)[hubName] else {
            throw EmbeddedHubError(description: "the local hub has no hub named '\(hubName)'")
        }
        return keys
    }

    /// The Listen and Full connection strings of the hub at `baseURL`, signed with each rule's
    /// `slot` key (the primary, which terminals use, unless asked).
    public func connectionStrings(baseURL: String, slot: LocalHubKeyFile.Slot = .primary) throws -> (
        listen: String, full: String
    ) {
        _ = try keys()
        guard let strings = try LocalHubKeyFile.read(keyFile).connectionStrings(hub: hubName, baseURL: baseURL, slot: slot)
        else {
            throw EmbeddedHubError(description: "\(keyFile.path) lacks the default rules' \(slot.rawValue) keys")
        }
        return strings
    }

    /// Asks the running hub to stop (SIGTERM) and waits up to `timeout` seconds for it to go,
    /// then kills it (SIGKILL). Returns what was stopped and how, or nil when none was
    /// running. Only a hub that proves it is ours is signalled: a stale file names a pid that
    /// may be anything by now. A hub that holds its recorded port but does not answer (hung),
    /// one of an earlier version, and one that holds this folder's lock and runs this program
    /// but no longer listens (its shutdown hung) are stopped too: the port, or the lock, proves
    /// it is the process of this folder's file.
    public func stop(timeout: Double = 10) async throws(LocalHubTrust.Distrust) -> StoppedHub? {
        guard let state = state() else { return nil }
        var unproven: String?
        do {
            _ = try await LocalHubTrust.verify(state)
        } catch  where error.kind == .stale {
            // A crashed hub's file: gone, an open window takes the hub for stopped, not crashed.
            if self.state()?.pid == state.pid { try? FileManager.default.removeItem(at: stateFile) }
            return nil
        } catch  where error.kind == .legacy {
            unproven = "of an earlier version"
        } catch  where error.kind == .silent && LocalHubTrust.holdsPort(state) {
            unproven = "not answering"
        } catch
            where LocalHubTrust.holdsLock(state, of: directory, program: URL(fileURLWithPath: executable).lastPathComponent)
        {
            let listening = state.port.flatMap { LocalProcess.listens(state.pid, port: $0) } ?? false
            unproven =
                (listening ? "not answering as this folder's hub" : "no longer listening")
                + " but holding this data folder's lock"
        }
        let ending = await Self.terminate(state, timeout: timeout)
        // A hub that had to be killed left its state file: gone, it would read as a crash.
        if self.state()?.pid == state.pid, !LocalProcess.isAlive(state.pid) { try? FileManager.default.removeItem(at: stateFile) }
        return StoppedHub(state: state, unproven: unproven, ending: ending, timeout: timeout)
    }

    /// SIGTERM (and SIGCONT, so a stopped hub can act on it), then SIGKILL if it is still
    /// there after `timeout` seconds; returns once the process is gone, or after 5 more
    /// seconds, saying which.
    @discardableResult
    static func terminate(_ state: LocalHubState, timeout: Double = 10) async -> StoppedHub.Ending {
        kill(state.pid, SIGTERM)
        kill(state.pid, SIGCONT)
        if await gone(state.pid, within: .seconds(timeout)) { return .exited }
        kill(state.pid, SIGKILL)
        return await gone(state.pid, within: .seconds(5)) ? .killed : .survived
    }

    private static func gone(_ pid: Int32, within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if !LocalProcess.isAlive(pid) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return !LocalProcess.isAlive(pid)
    }
}

/// A hub `hub stop` signalled: which, why it was taken for this folder's without its proof,
/// and how it ended.
public struct StoppedHub: Sendable, Equatable {
    public enum Ending: Sendable, Equatable {
        /// Gone after SIGTERM.
        case exited
        /// Still there `timeout` seconds after SIGTERM, gone after SIGKILL.
        case killed
        /// Still there after SIGKILL too.
        case survived
    }

    public let state: LocalHubState
    /// Why it was stopped without proving itself (hung, of an earlier version, no longer
    /// listening); nil when it answered as this folder's hub.
    public let unproven: String?
    public let ending: Ending
    /// The seconds it had after SIGTERM.
    public let timeout: Double

    /// What was done, in one line.
    public var line: String {
        let which = "the local hub (pid \(state.pid)" + (unproven.map { ", \($0)" } ?? "") + ")"
        switch ending {
        case .exited: return "stopped \(which)" + (unproven == nil ? "" : ": it ended on SIGTERM")
        case .killed: return "stopped \(which): it did not end within \(Int(timeout)) s of SIGTERM and was killed (SIGKILL)"
        case .survived: return "could not stop \(which): it is still running after SIGTERM and SIGKILL"
        }
    }
}

/// The embedded hub could not be found, started or read.
public struct EmbeddedHubError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
