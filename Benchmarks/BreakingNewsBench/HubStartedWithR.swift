import Foundation
import LocalHubSupport

/// 6c. The terminal on its own embedded hub, stopped with `hub stop`: the time from `r` to
/// the header saying `online` again (the hub started, its keys read, the stream open). Drives
/// the UI in tmux, as the end-to-end tests do, reading the screen every 10 ms; the worst of
/// the runs is reported.
func hubStartedWithR(binary: String, runs: Int) async throws -> BenchRow {
    guard let tmux = which("tmux") else { throw BenchError(description: "tmux is needed for the r → online row") }
    let home = output.appendingPathComponent("r-home")
    try? FileManager.default.removeItem(at: home)
    try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
    var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BREAKING_NEWS_") }
    environment["BREAKING_NEWS_HOME"] = home.path
    environment["BREAKING_NEWS_HUB_PORT"] = "0"
    environment["TERM"] = "xterm-256color"
    let socket = "bn-bench-\(getpid())"
    @discardableResult
    func run(_ arguments: [String]) throws -> String {
        let file = output.appendingPathComponent("tmux-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try ChildProcess.run([tmux, "-L", socket, "-f", "/dev/null"] + arguments, standardOutput: file.path)
        return (try? String(contentsOf: file, encoding: .utf8)) ?? ""
    }
    func waitForScreen(_ text: String, seconds: Double) async throws -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if try run(["capture-pane", "-p", "-t", "r"]).contains(text) { return true }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        return false
    }
    // A subscribed home: the hub streams only to a terminal it knows (it starts the hub too).
    guard try runProgram(binary, ["subscribe", "World"], environment: environment).status == 0 else {
        throw BenchError(description: "could not subscribe the bench's home")
    }
    let exports = environment.filter { $0.key.hasPrefix("BREAKING_NEWS_") || $0.key == "TERM" }
        .map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
    try run(["new-session", "-d", "-s", "r", "-x", "100", "-y", "30", "env \(exports) \(binary); sleep 600"])
    defer {
        _ = try? runProgram(binary, ["hub", "stop"], environment: environment)
        _ = try? run(["kill-server"])
    }
    guard try await waitForScreen("● online", seconds: 20) else {
        throw BenchError(description: "the terminal did not come online on its hub")
    }
    var times: [Double] = []
    for attempt in 1...runs {
        guard try runProgram(binary, ["hub", "stop"], environment: environment).status == 0,
            try await waitForScreen("local hub stopped", seconds: 20)
        else { throw BenchError(description: "the terminal did not say the hub stopped (run \(attempt))") }
        let pressed = ContinuousClock.now
        try run(["send-keys", "-t", "r", "r"])
        guard try await waitForScreen("● online", seconds: 20) else {
            throw BenchError(description: "r did not bring the terminal online (run \(attempt))")
        }
        let milliseconds = (ContinuousClock.now - pressed).seconds * 1000
        times.append(milliseconds)
        log("r → online run \(attempt): \(String(format: "%.0f", milliseconds)) ms")
    }
    let worst = times.max() ?? .nan
    return BenchRow(
        scenario: "terminal: r after 'hub stop' → online again (worst of \(runs))", value: worst, unit: "ms",
        target: "< 2000", met: worst < 2000)
}
