import Foundation
import HubTestSupport
import Synchronization

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
        return Result(status: running.process.terminationStatus, stdout: running.stdout, stderr: running.stderr)
    }

    /// Starts a long-running command whose output can be watched.
    func start(_ arguments: [String]) throws -> RunningCommand {
        let process = Process()
        process.executableURL = builtBinary()
        process.arguments = arguments
        process.environment = environment
        process.currentDirectoryURL = FileManager.default.temporaryDirectory
        return try RunningCommand(process)
    }
}

/// A command in the background, its output collected as it comes.
final class RunningCommand: Sendable {
    let process: Process
    private let out = OutputBuffer()
    private let err = OutputBuffer()

    init(_ process: Process) throws {
        self.process = process
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        stdout.fileHandleForReading.readabilityHandler = { [out] handle in
            let data = handle.availableData
            out.append(data)
        }
        stderr.fileHandleForReading.readabilityHandler = { [err] handle in
            let data = handle.availableData
            err.append(data)
        }
        try process.run()
    }

    var stdout: String { out.text }
    var stderr: String { err.text }

    /// Waits for the process to end; false on timeout.
    func wait(timeout: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { try? await Task.sleep(nanoseconds: 10_000_000) }
        if process.isRunning { return false }
        try? await Task.sleep(nanoseconds: 50_000_000)  // let the pipes drain
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
        if process.isRunning { process.terminate() }
    }
}

/// Bytes a pipe handed over so far.
final class OutputBuffer: Sendable {
    private let data = Mutex(Data())

    func append(_ more: Data) { data.withLock { $0.append(more) } }

    var text: String { data.withLock { String(decoding: $0, as: UTF8.self) } }
}
