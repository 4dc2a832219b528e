import Foundation
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

/// Issue 45, finding 1: text aimed at the wrong screen — a sentence typed into it at once, a
/// paste the terminal did not bracket — changes nothing stored and quits nothing, on every
/// screen. The built binary in tmux, on a real hub, with forty unread messages to lose.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct WrongScreenTypingEndToEndTests {
    static let sentence = "Fixed the bug: quit asking, subscribe to none, mark all read and undo"
    static let pasted = "line one of the notes\nAAA xxx zzz sdb\nqqq\n"

    /// What a key could have changed that is kept: the selection, the alert switches, the
    /// hub's installation, the read and deleted marks.
    struct Stored: Equatable {
        var defaults: String
        var tags: [String]
        var unread: JSONValue?
        var messages: Int
    }

    static func stored(_ user: Command, _ hub: HubProcess) async throws -> Stored {
        let defaults = try String(contentsOf: user.home.appendingPathComponent("config/defaults.json"), encoding: .utf8)
        let id = try #require(
            try JSONValue(
                parsing: String(contentsOf: user.home.appendingPathComponent("data/installation.json"), encoding: .utf8))[
                    "installationId"]?.stringValue)
        let installation = try await HubClient(connectionString: hub.full).installation(id: id)
        let counts = try JSONValue(parsing: try await user.run(["categories", "--json"]).stdout)
        let log = try await user.run(["log"])
        return Stored(
            defaults: defaults, tags: installation.tags ?? [], unread: counts["unreadTotal"],
            messages: log.stdout.split(separator: "\n").count)
    }

    /// Pastes `text` into the pane as a terminal without bracketed paste does.
    static func rawPaste(_ tmux: Tmux, _ session: String, _ text: String) async throws {
        _ = try await tmux.run(["set-buffer", "-b", "raw", text])
        _ = try await tmux.run(["paste-buffer", "-b", "raw", "-t", "=\(session):"])
        try await tmux.drained(session)
    }

    @Test func aSentenceOrARawPasteOnAnyScreenChangesNothing() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            #expect(try await user.run(["subscribe", "World", "Sports"]).status == 0)
            let client = try HubClient(connectionString: hub.full)
            for i in 0..<40 {
                _ = try await client.send(.template(["messageParam": "Breaking World News : story \(i)"]), tagExpression: "World")
            }
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("w", of: user, hub: hub.listen)
            try await tmux.waitFor("w") { $0.contains("3 Log (40)") }
            let before = try await Self.stored(user, hub)
            #expect(before.unread == .number("40"), "\(before)")

            // Categories: the sentence, then a raw paste of three lines.
            // The toast saying so lasts five seconds: seen, or gone by (a loaded machine), the
            // stored state below is what counts.
            try await tmux.type("w", Self.sentence)
            var screen = try await tmux.waitFor("w") {
                $0.contains("A paste goes into the message: press 2 for Compose") || $0.contains("choose the categories")
            }
            #expect(screen.contains("▸ [  ON ] World") && screen.contains("[  ON ] Sports"), "\(screen)")
            #expect(!screen.contains("exit=") && !screen.contains("Subscribe to no category"), "\(screen)")
            try await Self.rawPaste(tmux, "w", Self.pasted)
            screen = try await tmux.waitFor("w") { $0.contains("choose the categories") }
            #expect(!screen.contains("exit="), "\(screen)")

            // The Log: the same, with forty unread messages under the cursor.
            try await tmux.keys("w", "3")
            try await tmux.waitFor("w") { $0.contains("40 messages · 39 unread") }
            try await tmux.type("w", Self.sentence)
            try await Self.rawPaste(tmux, "w", Self.pasted)
            screen = try await tmux.waitFor("w") { $0.contains("1/40") }
            // A toast may cover the list's title: the tab and the position say it.
            #expect(screen.contains("3 Log (39)"), "\(screen)")
            #expect(!screen.contains("exit=") && !screen.contains("Deleted") && !screen.contains("Marked"), "\(screen)")

            // Compose: the sentence is the message, on the category row too; nothing checked or sent.
            try await tmux.keys("w", "2")
            try await tmux.waitFor("w") { $0.contains("Send breaking news") }
            try await tmux.keys("w", "Escape")
            try await tmux.type("w", "Quake hits the coast, all clear by noon")
            screen = try await tmux.waitFor("w") { $0.contains("▏Quake hits the coast, all clear by noon") }
            #expect(screen.contains("[ ] World   [ ] Politics") && screen.contains("[ ] All"), "\(screen)")
            #expect(!screen.contains("✓ sent") && !screen.contains("exit="), "\(screen)")

            let after = try await Self.stored(user, hub)
            // The window read the one message its cursor landed on, as landing on the Log does.
            #expect(after.defaults == before.defaults, "\(after.defaults)")
            #expect(after.tags == before.tags && after.messages == before.messages)
            #expect(after.unread == .number("39"), "only the message the cursor landed on is read: \(after)")
            try await tmux.keys("w", "Tab", "q")
            #expect(try await tmux.waitFor("w") { $0.contains("exit=") }.contains("exit=0"))
        }
    }
}
