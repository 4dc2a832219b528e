import Foundation
import HubTestSupport
import Testing

/// Issue 30: a terminal away past the hub's retention is told that messages expired, in its
/// log, on the screen and by `breaking-news log`.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct GapEndToEndTests {
    static let told = "2 messages expired on the hub while this terminal was away"

    @Test func aTerminalAwayPastRetentionIsToldMessagesExpired() async throws {
        let tmux = Tmux()
        defer { tmux.killServer() }
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        // Sent while no window is open: nothing of this home reads them.
        for text in ["old one", "old two"] {
            #expect(try await user.run(["send", text, "--category", "World"]).status == 0)
        }
        // Past the retention the prune is given, they go (the hub keeps the device's gap).
        try await Task.sleep(for: .seconds(11))
        let pruned = try await user.run(["hub", "prune", "--retention", "10s"])
        #expect(pruned.status == 0, "\(pruned.stdout) \(pruned.stderr)")
        #expect(try await user.run(["send", "fresh news", "--category", "World"]).status == 0)

        _ = try await tmux.startUIOnItsOwnHub("w", of: user)
        try await tmux.keys("w", "3")
        let screen = try await tmux.waitFor("w", timeout: 30) {
            $0.contains(Self.told) && $0.contains("World       fresh news")
        }
        #expect(!screen.contains("old one") && !screen.contains("old two"), "\(screen)")
        // In the log's order: the notice where the lost messages were, before what followed.
        let printed = try await user.run(["log"])
        let lines = printed.stdout.split(separator: "\n").map(String.init)
        let notice = try #require(lines.firstIndex { $0.contains(Self.told) }, "\(printed.stdout)")
        let fresh = try #require(lines.firstIndex { $0.contains("fresh news") }, "\(printed.stdout)")
        #expect(notice < fresh)
    }
}
