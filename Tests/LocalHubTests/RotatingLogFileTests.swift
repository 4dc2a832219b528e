import Foundation
import HubTestSupport
import LocalHubSupport
import Testing

/// `hub.log` rotated by size (issue 30): on `main` it only grew.
@Suite struct RotatingLogFileTests {
    /// The files of the log at `url`, oldest first, as they are on disk.
    static func parts(_ url: URL) -> [URL] {
        ((1...RotatingLogFile.kept).reversed().map { RotatingLogFile.rotated(url, $0) } + [url])
            .filter { FileManager.default.fileExists(atPath: $0.path) }
    }

    static func size(_ url: URL) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int) ?? 0
    }

    /// The line numbers the log holds, oldest file first.
    static func numbers(_ url: URL) throws -> [Int] {
        try parts(url).flatMap { part in
            try String(contentsOf: part, encoding: .utf8).split(separator: "\n").compactMap { line in
                line.hasPrefix("line ") ? Int(line.dropFirst(5).prefix(6)) : nil
            }
        }
    }

    /// 3,000 lines of 100 bytes, 300 KB, through a log rotated at 16 KB: four files of at most
    /// 16 KB and a line, the newest line kept, none lost between the oldest kept and it.
    @Test func theFilesStayBoundedAndKeepTheNewestLines() throws {
        let url = TestHub.temporaryDirectory().appendingPathComponent("hub.log")
        let cap = 16 << 10
        let log = try RotatingLogFile(url: url, maximumBytes: cap, carriesStandardStreams: false)
        for n in 1...3000 {
            let line = "line \(String(format: "%06d", n)) "
            log.write(line + String(repeating: "x", count: 99 - line.utf8.count) + "\n")
        }
        let parts = Self.parts(url)
        #expect(parts.count == RotatingLogFile.kept + 1)
        #expect(!FileManager.default.fileExists(atPath: RotatingLogFile.rotated(url, RotatingLogFile.kept + 1).path))
        for part in parts { #expect(Self.size(part) <= cap + 100, "\(part.lastPathComponent): \(Self.size(part)) bytes") }
        let kept = try Self.numbers(url)
        #expect(kept.last == 3000)
        #expect(kept == Array((kept.first ?? 0)...3000))
        // The rotated files are full: no more is dropped than the bound asks.
        #expect(kept.count >= RotatingLogFile.kept * cap / 100)
        #expect(kept.first.map { $0 > 1 } == true)
    }

    /// A log an earlier hub let grow is rotated when the hub opens it, not written on.
    @Test func aFileAlreadyPastTheSizeIsRotatedWhenOpened() throws {
        let url = TestHub.temporaryDirectory().appendingPathComponent("hub.log")
        let old = String(repeating: "old line\n", count: 4000)
        try Data(old.utf8).write(to: url)
        let log = try RotatingLogFile(url: url, maximumBytes: 16 << 10, carriesStandardStreams: false)
        log.write("line 000001 new\n")
        #expect(try String(contentsOf: RotatingLogFile.rotated(url, 1), encoding: .utf8) == old)
        #expect(try String(contentsOf: url, encoding: .utf8) == "line 000001 new\n")
        // A line longer than any file may hold is cut, and the file rotates after it.
        log.write(String(repeating: "y", count: 1 << 20) + "\n")
        #expect(Self.size(RotatingLogFile.rotated(url, 1)) <= RotatingLogFile.longestLine + 16)
        #expect(Self.size(url) == 0)
        #expect(Self.size(RotatingLogFile.rotated(url, 2)) == old.utf8.count)
    }
}
