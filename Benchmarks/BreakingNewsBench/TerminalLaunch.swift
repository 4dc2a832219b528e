import Foundation

/// 5a/5b. Starts the terminal UI on a pseudo-terminal with the hub already running; times
/// launch to the first frame, then reads its resident memory once it is connected.
func terminalLaunch(binary: String, environment: [String: String], runs: Int) throws -> [BenchRow] {
    var firstFrames: [Double] = []
    var memory: [Double] = []
    for run in 0..<runs {
        let (frame, rss) = try launchOnce(binary: binary, environment: environment)
        firstFrames.append(frame)
        memory.append(rss)
        log(
            "terminal run \(run + 1): first frame \(String(format: "%.1f", frame)) ms, \(String(format: "%.1f", rss)) MB resident"
        )
    }
    let frame = median(firstFrames)
    let rss = median(memory)
    return [
        BenchRow(
            scenario: "terminal: launch to first frame (hub running)", value: frame, unit: "ms", target: "< 150", met: frame < 150
        ),
        BenchRow(scenario: "terminal: resident memory", value: rss, unit: "MB", target: "< 30", met: rss < 30),
    ]
}

/// Runs the UI under `script`, which gives it a pseudo-terminal, and watches the output.
private func launchOnce(binary: String, environment: [String: String]) throws -> (firstFrame: Double, residentMB: Double) {
    guard let script = which("script") else {
        throw BenchError(description: "script (bsdutils) is needed to give the UI a terminal")
    }
    var env = environment
    env["TERM"] = "xterm-256color"
    env["LINES"] = "30"
    env["COLUMNS"] = "100"
    let process = Process()
    process.executableURL = URL(fileURLWithPath: script)
    process.arguments = ["-q", "-f", "-e", "-c", binary, "/dev/null"]
    process.environment = env
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    let seen = Seen()
    output.fileHandleForReading.readabilityHandler = { handle in seen.append(handle.availableData) }
    let start = ContinuousClock.now
    try process.run()
    var firstFrame: Double?
    var connectedAt: Date?
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
        if firstFrame == nil, seen.contains("Breaking News") { firstFrame = (ContinuousClock.now - start).seconds * 1000 }
        if connectedAt == nil, seen.contains("online") { connectedAt = Date() }
        if let connectedAt, Date().timeIntervalSince(connectedAt) > 1.0 { break }
        usleep(500)
    }
    let child =
        (try? String(
            contentsOfFile: "/proc/\(process.processIdentifier)/task/\(process.processIdentifier)/children", encoding: .utf8))?
        .split(separator: " ").compactMap { Int32($0) }.first
    let rss = child.map(residentMegabytes) ?? .nan
    input.fileHandleForWriting.write(Data("q".utf8))
    for _ in 0..<200 where process.isRunning { usleep(10_000) }
    if process.isRunning {
        if let child { kill(child, SIGKILL) }
        process.terminate()
    }
    output.fileHandleForReading.readabilityHandler = nil
    guard let firstFrame else { throw BenchError(description: "the terminal drew nothing") }
    return (firstFrame, rss)
}

/// Output seen so far, shared with the pipe's reader.
private final class Seen: @unchecked Sendable {
    private var data = Data()
    private let lock = NSLock()

    func append(_ more: Data) {
        lock.lock()
        data.append(more)
        lock.unlock()
    }

    func contains(_ text: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return data.range(of: Data(text.utf8)) != nil
    }
}

/// VmRSS of a process, in MB.
func residentMegabytes(_ pid: pid_t) -> Double {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return .nan }
    let kilobytes = line.split(separator: " ").compactMap { Double($0) }.first ?? .nan
    return kilobytes / 1024
}
