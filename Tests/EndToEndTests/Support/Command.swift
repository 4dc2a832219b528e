import Foundation
import HubTestSupport
import LocalHubSupport
import Synchronization
import TestTiers

/// The built binary run as a user runs it, with its own environment.
struct Command {
    var environment: [String: String]

    /// A home of its own (`BREAKING_NEWS_HOME`) and, by default, an embedded hub on a free port.
    static func freshHome(extra: [String: String] = [:]) -> Command {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("bn-e2e-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        var environment = ProcessInfo.processInfo.environment
        for key in environment.keys where key.hasPrefix("BREAKING_NEWS_") { environment[key] = nil }
        environment["BREAKING_NEWS_HOME"] = home.path
        environment["BREAKING_NEWS_HUB_PORT"] = "0"
        for (key, value) in extra { environment[key] = value }
        return Command(environment: environment)
    }

    var home: URL { URL(fileURLWithPath: environment["BREAKING_NEWS_HOME"]!) }

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String

        var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

    /// Runs to completion (at most `timeout` seconds). Waits by sleeping, never by blocking a
    /// thread: tests share a cooperative pool as wide as the machine has cores, and a hub or
    /// peer running in this process needs it to answer the command.
    func run(_ arguments: [String], timeout: Double = 60) async throws -> Result {
        let running = try start(arguments)
        guard await running.wait(timeout: timeout) else {
            await running.terminate()
            throw TestHubError(description: "'\(arguments.joined(separator: " "))' did not finish in \(timeout) s")
        }
        return Result(status: running.status, stdout: running.stdout, stderr: running.stderr)
    }

    /// Starts a long-running command whose output can be watched.
    func start(_ arguments: [String]) throws -> RunningCommand {
        try TestTier.requireFullSuite("the built program")
        return try RunningCommand(
            ChildProcess.start(
                [builtBinary().path] + arguments, environment: environment,
                directory: FileManager.default.temporaryDirectory.path))
    }
}

/// A command in the background, its output collected as it comes. Started with
/// `ChildProcess` (posix_spawn), not Foundation's Process: Process.run in our Foundation
/// copies whole `d_name` fields of /proc/self/fd and reads past readdir's buffer, which
/// crashed the test runner now and then on a busy machine.
final class RunningCommand: Sendable {
    let child: ChildProcess.Running
    private let out: PipeReader
    private let err: PipeReader

    init(_ child: ChildProcess.Running) {
        self.child = child
        out = PipeReader(FileHandle(fileDescriptor: child.standardOutput, closeOnDealloc: true))
        err = PipeReader(FileHandle(fileDescriptor: child.standardError, closeOnDealloc: true))
    }

    var stdout: String { out.text }
    var stderr: String { err.text }
    /// Its exit status (-1 while it runs).
    var status: Int32 { child.exitStatus ?? -1 }

    /// Waits for the process to end and its output to be read to the end; false on timeout.
    func wait(timeout: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while child.isRunning, Date() < deadline { try? await Task.sleep(nanoseconds: 10_000_000) }
        if child.isRunning { return false }
        // A child of the command may hold the pipes a little longer: a second at most.
        let drained = Date().addingTimeInterval(1)
        while !(out.isFinished && err.isFinished), Date() < drained { try? await Task.sleep(nanoseconds: 5_000_000) }
        return true
    }

    /// Waits until `condition` holds for the output seen so far; false on timeout.
    func waitFor(timeout: Double = 20, _ condition: (_ stdout: String, _ stderr: String) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(stdout, stderr) { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return condition(stdout, stderr)
    }

    /// Asks it to stop and waits (10 s at most).
    func terminate() async {
        stop()
        _ = await wait(timeout: 10)
    }

    /// Asks it to stop, without waiting (for `defer`).
    func stop() {
        child.signal(SIGTERM)
    }
}

/// Reads a pipe to its end on a thread of its own, with plain blocking reads. Not
/// `readabilityHandler`: its dispatch source outlives the descriptor when the handle goes
/// away mid-stream, and libdispatch's event loop then crashes the whole test process.
final class PipeReader: Sendable {
    private let state = Mutex((data: Data(), finished: false))

    init(_ handle: FileHandle) {
        let thread = Thread { [self] in
            var bytes = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = bytes.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                if count > 0 {
                    state.withLock { $0.data.append(contentsOf: bytes[0..<count]) }
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            // The handle closes its descriptor when it goes, after the last read.
            withExtendedLifetime(handle) {}
            state.withLock { $0.finished = true }
        }
        thread.name = "pipe reader"
        thread.start()
    }

    var text: String { state.withLock { String(decoding: $0.data, as: UTF8.self) } }
    var isFinished: Bool { state.withLock { $0.finished } }
}
