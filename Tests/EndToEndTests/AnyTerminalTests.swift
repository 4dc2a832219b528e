import Foundation
import HubTestSupport
import TestTiers
import Testing

/// Any terminal (issue 12, finding 7), driven in tmux: a terminal type that cannot show the
/// UI gets one line and exit status 2; the smallest screen shows everything by scrolling; a
/// locale that is not UTF-8 gets ASCII.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct AnyTerminalTests {
    static let cases: [(term: String?, says: String)] = [
        (nil, "TERM is not set"), ("", "TERM is not set"), ("dumb", "cannot move the cursor"),
        ("no-such-terminal", "is not known here"), ("../../../tmp/x", "is not a terminal type name"),
    ]

    @Test func anUnusableTerminalTypeGetsOneLineAndExitStatus2() async throws {
        let tmux = Tmux()
        defer { tmux.killServer() }
        let user = Command.freshHome()
        for (i, item) in Self.cases.enumerated() {
            var environment = ["BREAKING_NEWS_HOME": user.home.path]
            var command = builtBinary().path
            if let term = item.term { environment["TERM"] = term } else { command = "env -u TERM " + command }
            try await tmux.start(session: "t\(i)", command: command, environment: environment, columns: 200)
            let screen = try await tmux.waitFor("t\(i)") { $0.contains("exit=") }
            let lines = screen.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            #expect(lines.count == 2, "one line, then the status: \(screen)")
            #expect(lines.first?.hasPrefix("breaking-news: ") == true && lines.first?.contains(item.says) == true, "\(screen)")
            #expect(screen.contains("exit=2"), "\(screen)")
            #expect(!screen.contains("Error opening terminal"))
        }
    }

    @Test func theSmallestScreenShowsEverythingByScrolling() async throws {
        let tmux = Tmux()
        defer { tmux.killServer() }
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        var screen = try await tmux.startUIOnItsOwnHub("s", of: user, columns: 50, rows: 14)
        // The note that the hub was started takes the footer's row until the next key.
        if screen.contains("▶ Started the local hub") {
            try await tmux.keys("s", "Down")
            screen = try await tmux.waitFor("s") { !$0.contains("▶ Started the local hub") }
        }
        let footer = screen.split(separator: "\n").last.map(String.init) ?? ""
        #expect(footer == " Space/Enter toggle  s subscribe  …  ? help", "its own keys, then … and help: \(screen)")

        try await tmux.keys("s", "?")
        screen = try await tmux.waitFor("s") { $0.contains("Keys · 1–8 of") && $0.contains("↑↓ PgUp PgDn scroll") }
        try await tmux.keys("s", "End")
        screen = try await tmux.waitFor("s") { $0.contains("leave the field") }
        try await tmux.keys("s", "PPage", "k", "g")
        screen = try await tmux.waitFor("s") { $0.contains("Keys · 1–8 of") && $0.contains("Everywhere") }
        try await tmux.keys("s", "x")
        screen = try await tmux.waitFor("s") { !$0.contains("Keys · ") }
        #expect(screen.contains("[ OFF ] World"))
    }

    @Test func aLocaleThatIsNotUTF8GetsASCII() async throws {
        let tmux = Tmux()
        defer { tmux.killServer() }
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        let screen = try await tmux.startUIOnItsOwnHub("a", of: user, extra: ["LC_ALL": "C", "LANG": "C"], online: "* online")
        let lines = screen.split(separator: "\n").map(String.init)
        #expect(lines[2] == String(repeating: "-", count: 100), "the rule in ASCII: \(screen)")
        #expect(lines.contains(" > [ OFF ] World"))
        #expect(screen.unicodeScalars.allSatisfy { $0.value < 0x80 }, "\(screen)")
    }
}
