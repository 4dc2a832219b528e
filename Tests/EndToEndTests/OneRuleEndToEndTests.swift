import Foundation
import HubTestSupport
import NotificationHubs
import Testing

/// Issue 28, finding 9: one rule for the command line and the screen.
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct OneRuleCommandLineTests {
    /// `send TEXT` goes nowhere the sender did not name: --category (repeatable) or --all.
    @Test func sendNeedsCategoriesOrAll() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            let bare = try await user.run(["send", "everyone?"])
            #expect(bare.status == 2, "\(bare.stdout)")
            #expect(bare.stderrLines.count == 1 && bare.stderr.contains("--category") && bare.stderr.contains("--all"))
            #expect(bare.stdout.isEmpty, "nothing sent")
            let all = try await user.run(["send", "everyone", "--all"])
            #expect(all.status == 0, "\(all.stderr)")
            let sent = all.stdout.split(separator: "\n").filter { $0.contains(" sent ") }
            #expect(sent.count == 6)
            let both = try await user.run(["send", "x", "--all", "--category", "World"])
            #expect(both.status == 2)
        }
    }

    /// Short options for the common flags.
    @Test func theCommonFlagsHaveShortOptions() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            let sent = try await user.run(["send", "short", "-c", "World"])
            #expect(sent.status == 0, "\(sent.stderr)")
            let everyone = try await user.run(["send", "shorter", "-a"])
            #expect(everyone.status == 0, "\(everyone.stderr)")
            for arguments in [
                ["log", "-c", "World", "-n", "1", "-j"], ["log", "-u", "-S", "1h"], ["categories", "-j"],
            ] {
                let result = try await user.run(arguments)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
            }
            let last = try await user.run(["log", "-c", "World", "-n", "1", "-j"])
            #expect(last.stdout.split(separator: "\n").count == 1)
        }
    }

    /// Stopped by a signal, `log --follow` exits as a shell expects: 130 for Ctrl-C (SIGINT),
    /// 143 for SIGTERM.
    @Test func followExitsWithTheSignalsStatus() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            let client = try HubClient(connectionString: hub.full)
            for (signal, status) in [(SIGINT, Int32(130)), (SIGTERM, 143)] {
                let follow = try user.start(["log", "--follow"])
                // Following: what arrives now is printed (so its signals are its own by now).
                let text = "Breaking World News : before signal \(signal)"
                _ = try await client.send(.template(["messageParam": text]), tagExpression: "World")
                let printed = await follow.waitFor { out, _ in out.contains(text) }
                #expect(printed, "\(follow.stderr)")
                follow.child.signal(signal)
                #expect(await follow.wait(timeout: 20))
                #expect(follow.status == status, "signal \(signal): \(follow.stderr)")
            }
        }
    }
}

/// Finding 9, on the screen: G is the last category, the help says Enter toggles, the footer
/// on a result row says what Enter does there, a message with a line break is not cut.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct OneRuleScreenTests {
    /// A window of a home subscribed to World, with the Full key, on a hub of its own.
    static func withWindow(_ body: (Tmux, HubClient) async throws -> Void) async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("o", of: user, hub: hub.full)
            try await body(tmux, try HubClient(connectionString: hub.full))
        }
    }

    @Test func gIsTheLastCategory() async throws {
        try await Self.withWindow { tmux, _ in
            try await tmux.keys("o", "G")
            try await tmux.waitFor("o") { $0.contains(" ▸ [ OFF ] Sports") }
        }
    }

    @Test func theHelpSaysEnterTogglesACategory() async throws {
        try await Self.withWindow { tmux, _ in
            try await tmux.keys("o", "?")
            let screen = try await tmux.waitFor("o") { $0.contains("┌ Keys") }
            #expect(screen.contains("Space/Enter") && screen.contains("toggle, or press Subscribe"), "\(screen)")
        }
    }

    /// A send's result row: the footer says Enter explains, not "Space check".
    @Test func theFooterOnAResultRowSaysWhatEnterDoes() async throws {
        try await Self.withWindow { tmux, _ in
            try await tmux.keys("o", "2")
            try await tmux.type("o", "footer check")
            try await tmux.keys("o", "Escape")
            try await tmux.keys("o", "Space")
            try await tmux.keys("o", "Up")
            try await tmux.keys("o", "Enter")
            try await tmux.waitFor("o") { $0.contains("✓ sent") }
            // From the field: the boxes, Send, the first result.
            try await tmux.keys("o", "Down", "Down", "Down")
            let screen = try await tmux.waitFor("o") { $0.contains("Enter explain") }
            #expect(!screen.contains("Space check"), "\(screen)")
        }
    }

    /// A message with a line break, short enough to fit: shown whole, no "…".
    @Test func aRowWithALineBreakIsNotCut() async throws {
        try await Self.withWindow { tmux, client in
            _ = try await client.send(.template(["messageParam": "Breaking World News : two\nlines"]), tagExpression: "World")
            try await tmux.keys("o", "3")
            let screen = try await tmux.waitFor("o") { $0.contains("two lines") }
            let row = screen.split(separator: "\n").first { $0.contains("two lines") } ?? ""
            #expect(!row.contains("…"), "nothing was cut: \(row)")
        }
    }
}
