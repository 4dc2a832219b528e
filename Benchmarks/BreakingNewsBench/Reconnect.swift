import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import Synchronization

/// 6. A receiver (`log --follow`, the same receiver the UI runs) on a hub that is killed and
/// started again on its port: the time from the new hub accepting connections to the
/// receiver saying it is back. The product promises 2 s; the worst of the runs is reported.
func reconnect(binary: String, runs: Int) async throws -> BenchRow {
    let folder = output.appendingPathComponent("reconnect")
    try? FileManager.default.removeItem(at: folder)
    let hubFolder = folder.appendingPathComponent("hub")
    try FileManager.default.createDirectory(at: hubFolder, withIntermediateDirectories: true)
    let port = 20_000 + Int.random(in: 0..<10_000)
    func startHub() throws -> ChildProcess.Running {
        let hub = try ChildProcess.start(
            [
                binary, "hub", "serve", "--port", String(port), "--data", hubFolder.path, "--hub", "breakingnews", "--log-level",
                "error",
            ] + HubProcess.unlimitedClients)
        close(hub.standardOutput)
        close(hub.standardError)
        return hub
    }
    var hub = try startHub()
    defer {
        hub.signal(SIGTERM)
        hub.waitUntilExit()
    }
    guard waitForListener(port: port, seconds: 10) else { throw BenchError(description: "the hub did not listen on \(port)") }
    let keys = try LocalHubKeyFile.read(hubFolder.appendingPathComponent(LocalHubKeyFile.fileName))["breakingnews"]!
    let listen = LocalHubKeyFile.connectionString(
        baseURL: "http://127.0.0.1:\(port)", hub: "breakingnews", rule: AuthorizationRule.listenRuleName,
        key: keys[AuthorizationRule.listenRuleName]!)
    var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BREAKING_NEWS_") }
    environment["BREAKING_NEWS_HOME"] = folder.appendingPathComponent("home").path
    environment["BREAKING_NEWS_CONNECTION_STRING"] = listen
    guard try runProgram(binary, ["subscribe", "World"], environment: environment).status == 0 else {
        throw BenchError(description: "the reconnect scenario could not subscribe")
    }
    let follow = try ChildProcess.start([binary, "log", "--follow"], environment: environment)
    close(follow.standardOutput)
    let said = LineCounter(follow.standardError)
    defer {
        follow.signal(SIGTERM)
        follow.waitUntilExit()
    }
    // Online once before the first cut: give the stream a moment to open.
    try await Task.sleep(nanoseconds: 1_000_000_000)
    var times: [Double] = []
    for run in 1...runs {
        kill(hub.pid, SIGKILL)
        hub.waitUntilExit()
        guard await said.wait(for: "lost the hub", count: run, seconds: 10) else {
            throw BenchError(description: "the receiver did not notice the hub going (run \(run))")
        }
        hub = try startHub()
        guard waitForListener(port: port, seconds: 10) else { throw BenchError(description: "the hub did not come back") }
        let back = ContinuousClock.now
        guard await said.wait(for: "reconnected to the hub", count: run, seconds: 10) else {
            throw BenchError(description: "the receiver did not come back within 10 s (run \(run))")
        }
        let milliseconds = (ContinuousClock.now - back).seconds * 1000
        times.append(milliseconds)
        log("reconnect run \(run): online again \(String(format: "%.0f", milliseconds)) ms after the hub was back")
    }
    let worst = times.max() ?? .nan
    return BenchRow(
        scenario: "reconnect: online again after the hub is back (worst of \(runs))", value: worst, unit: "ms", target: "< 2000",
        met: worst < 2000)
}

/// Counts lines containing a phrase in a child's output, read on a thread of its own.
final class LineCounter: Sendable {
    private let text = Mutex("")

    init(_ descriptor: Int32) {
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                let chunk = String(decoding: buffer[..<count], as: UTF8.self)
                text.withLock { $0 += chunk }
            }
            close(descriptor)
        }
        thread.start()
    }

    /// Waits until `phrase` has been said `count` times; false after `seconds`.
    func wait(for phrase: String, count: Int, seconds: Double) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if text.withLock({ $0.components(separatedBy: phrase).count - 1 }) >= count { return true }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
        return false
    }
}
