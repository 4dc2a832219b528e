import Foundation
import LocalHubSupport

/// One row of the results table and of `results.json`.
struct BenchRow {
    var scenario: String
    var value: Double
    var unit: String
    /// The target, written as a comparison (`>= 1000000`, `< 150`, `<= 1.0` for ratios).
    var target: String
    var met: Bool
    var peer: String?
    var peerValue: Double?
    var ratio: Double?

    var json: String {
        func number(_ x: Double?) -> String {
            guard let x else { return "null" }
            return x.rounded() == x && abs(x) < 1e15 ? String(Int(x)) : String(format: "%.3f", x)
        }
        func string(_ s: String?) -> String { s.map { "\"\($0.replacingOccurrences(of: "\"", with: "\\\""))\"" } ?? "null" }
        return
            "{\"scenario\":\(string(scenario)),\"value\":\(number(value)),\"unit\":\(string(unit)),\"target\":\(string(target)),"
            + "\"met\":\(met),\"peer\":\(string(peer)),\"peer_value\":\(number(peerValue)),\"ratio\":\(number(ratio))}"
    }
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func formatted(_ value: Double) -> String {
    if value.isNaN { return "—" }
    if value >= 1000 {
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        formatter.maximumFractionDigits = 0
        return formatter.string(from: NSNumber(value: value)) ?? String(value)
    }
    return value >= 10 ? String(format: "%.1f", value) : String(format: "%.2f", value)
}

/// Prints the table.
func printTable(_ rows: [BenchRow]) {
    let header = ["scenario", "value", "unit", "target", "met", "peer", "peer value", "ratio"]
    let cells = rows.map { row in
        [
            row.scenario, formatted(row.value), row.unit, row.target, row.met ? "yes" : "NO", row.peer ?? "",
            row.peerValue.map(formatted) ?? "",
            row.ratio.map { String(format: "%.2f", $0) } ?? "",
        ]
    }
    let widths = header.indices.map { i in ([header[i]] + cells.map { $0[i] }).map(\.count).max() ?? 0 }
    func line(_ values: [String]) -> String {
        values.enumerated().map { i, v in
            i == 1 || i == 6 || i == 7
                ? String(repeating: " ", count: widths[i] - v.count) + v
                : v.padding(toLength: widths[i], withPad: " ", startingAt: 0)
        }
        .joined(separator: "  ")
    }
    print(line(header))
    print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
    for row in cells { print(line(row)) }
}

/// Runs a program to completion and returns its standard output (standard error is left
/// on the terminal).
@discardableResult
func runProgram(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (
    status: Int32, output: String
) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// A program in `PATH`, if installed.
func which(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    let directories: [String] = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"]
    for directory in directories {
        let path = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
}

func log(_ text: String) {
    // Not FileHandle: it traps on a closed pipe, and the bench must live to stop its children.
    let line = Array("bench: \(text)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`, trying for up to `seconds`.
func waitForListener(port: Int, seconds: Double) -> Bool { Loopback.waitForListener(port: port, within: .seconds(seconds)) }

/// Long-lived children (the hub, nginx): stopped too when the bench is interrupted or its
/// output pipe closes, so nothing keeps listening after it.
nonisolated(unsafe) private var longLivedChildren: [pid_t] = Array(repeating: 0, count: 8)

func keepTrack(of process: Process) {
    if let slot = longLivedChildren.firstIndex(of: 0) { longLivedChildren[slot] = process.processIdentifier }
}

func forget(_ process: Process) {
    if let slot = longLivedChildren.firstIndex(of: process.processIdentifier) { longLivedChildren[slot] = 0 }
}

func stopChildrenOnSignals() {
    for signalNumber in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] {
        signal(signalNumber) { received in
            for pid in longLivedChildren where pid > 0 { kill(pid, SIGTERM) }
            _exit(128 + received)
        }
    }
}
