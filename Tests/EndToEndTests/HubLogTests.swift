import Foundation
import HubTestSupport
import LocalHubSupport
import Testing

/// `hub.log` rotates by size (issue 30): on `main` the shell appended the hub's output to it
/// for as long as the hub ran, and it only grew.
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct HubLogTests {
    static func parts(_ url: URL) -> [URL] {
        ((1...RotatingLogFile.kept).reversed().map { RotatingLogFile.rotated(url, $0) } + [url])
            .filter { FileManager.default.fileExists(atPath: $0.path) }
    }

    static func size(_ url: URL) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int) ?? 0
    }

    /// The hub process writes its own log through the rotating file: 1,500 requests logged
    /// at debug, about 200 KB, through a log rotated at 16 KB. Four files stay, each at most
    /// 16 KB and a line; the last request's line is there, and every request from the oldest
    /// kept to the last, in order.
    @Test func theHubWritesItsLogRotatedBySizeKeepingTheNewestLines() async throws {
        let directory = TestHub.temporaryDirectory()
        let log = directory.appendingPathComponent(LocalHubDefaults.logFileName)
        let cap = 16 << 10
        let count = 1500
        try await HubProcess.with(
            directory: directory,
            arguments: ["--log-file", log.path, "--log-file-size", "16K", "--log-level", "debug"]
        ) { hub in
            for n in 1...count {
                let answer = try await raw(
                    .GET, "\(hub.state.url)/news/installations/none?api-version=2015-01",
                    headers: [("TrackingId", "request-\(n)")])
                #expect(answer.status == 401)
            }
            // Each line is written before its answer goes out.
            let parts = Self.parts(log)
            #expect(parts.count == RotatingLogFile.kept + 1)
            #expect(!FileManager.default.fileExists(atPath: RotatingLogFile.rotated(log, RotatingLogFile.kept + 1).path))
            for part in parts { #expect(Self.size(part) <= cap + 1024, "\(part.lastPathComponent): \(Self.size(part))") }
            let requests = try parts.flatMap { part in
                try String(contentsOf: part, encoding: .utf8).split(separator: "\n").compactMap { line in
                    line.firstRange(of: "trackingId=request-").flatMap { Int(line[$0.upperBound...].prefix { $0.isNumber }) }
                }
            }
            #expect(requests.last == count)
            #expect(requests == Array((requests.first ?? 0)...count))
            #expect(requests.first.map { $0 > 1 } == true, "the oldest requests' lines are dropped")
        }
    }

    /// A hub started in the background (a subscribe here; the UI and every command alike)
    /// writes hub.log itself: one an earlier hub let grow past the size is set aside whole as
    /// hub.log.1, and the new one begins with this start.
    @Test func aHubStartedInTheBackgroundRotatesTheLogItFinds() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        let hubFolder = user.home.appendingPathComponent("data/hub")
        try FileManager.default.createDirectory(at: hubFolder, withIntermediateDirectories: true)
        let log = hubFolder.appendingPathComponent(LocalHubDefaults.logFileName)
        let old = (1...90_000).map { "an old line \($0) of a hub that never rotated its log\n" }.joined()
        try Data(old.utf8).write(to: log)
        #expect(Self.size(log) > RotatingLogFile.defaultMaximumBytes)

        let subscribed = try await user.run(["subscribe", "World"])
        #expect(subscribed.status == 0, "\(subscribed.stderr)")
        #expect(try String(contentsOf: RotatingLogFile.rotated(log, 1), encoding: .utf8) == old)
        let fresh = try String(contentsOf: log, encoding: .utf8)
        #expect(fresh.contains("local hub listening on"), "\(fresh)")
        #expect(!fresh.contains("an old line"))
    }
}
