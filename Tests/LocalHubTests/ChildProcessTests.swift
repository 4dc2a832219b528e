import Foundation
import LocalHubSupport
import TestTiers
import Testing

/// What the terminal UI starts with `ChildProcess` (issue 33): a program found as a shell
/// finds it, and one run in the foreground with what it is to read on its standard input.
@Suite(.tags(.live), .fullSuiteOnly) struct ChildProcessTests {
    @Test func programsAreFoundOnThePath() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bn-path-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("sh"), withIntermediateDirectories: true)
        // A folder named like the program is passed over; the first executable file wins.
        #expect(ChildProcess.executable(named: "sh", searchPath: "\(folder.path)::/bin:/usr/bin") == "/bin/sh")
        #expect(ChildProcess.executable(named: "/bin/sh", searchPath: "") == "/bin/sh")
        #expect(ChildProcess.executable(named: "no-such-program-here", searchPath: "/bin:/usr/bin") == nil)
        #expect(ChildProcess.executable(named: "", searchPath: "/bin") == nil)
    }

    @Test func aForegroundProgramReadsWhatItIsGiven() throws {
        func run(giving text: String) throws -> Int32 {
            var ends: [Int32] = [-1, -1]
            try #require(pipe(&ends) == 0)
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) }
            close(ends[1])
            defer { close(ends[0]) }
            return try ChildProcess.runInForeground(
                ["/bin/sh", "-c", #"read line; [ "$line" = 'a;$(touch x)' ] || exit 7"#], input: ends[0])
        }
        #expect(try run(giving: "a;$(touch x)\n") == 0)
        #expect(try run(giving: "other\n") == 7)
    }
}
