import Foundation
import HubTestSupport
import NotificationHubs
import Testing

/// Issue 28, finding 6: failures you can read — whole, with their fix, once.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct FailuresEndToEndTests {
    /// A send refused for its key: Enter on the row shows the whole error and the variable to
    /// set; a send refused before it went (an empty message) replaces the last send's rows.
    @Test func aFailedSendOpensItsWholeErrorAndFix() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let tmux = Tmux()
            defer { tmux.killServer() }
            // A sender with the Full key: its rows go when the next send is refused.
            let sender = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            try await tmux.startUI("ok", of: sender, hub: hub.full)
            try await tmux.keys("ok", "2")
            try await tmux.type("ok", "first story")
            try await tmux.keys("ok", "Escape")
            try await tmux.keys("ok", "Space")
            try await tmux.keys("ok", "Enter")
            try await tmux.waitFor("ok") { $0.contains("✓ sent") }
            try await tmux.keys("ok", "Enter")
            let screen = try await tmux.waitFor("ok") { $0.contains("Cannot send: the message is empty") }
            #expect(!screen.contains("✓ sent"), "the last send's rows are not this one's: \(screen)")

            // A window with the Listen key only: its send is refused.
            let listener = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            try await tmux.startUI("no", of: listener, hub: hub.listen)
            try await tmux.keys("no", "2")
            try await tmux.type("no", "not allowed")
            try await tmux.keys("no", "Escape")
            try await tmux.keys("no", "Space")
            try await tmux.keys("no", "Enter")
            var refused = try await tmux.waitFor("no") { $0.contains("✗ failed") }
            #expect(refused.contains("the hub answered 403"), "\(refused)")
            try await tmux.keys("no", "Down", "Down", "Down")
            refused = try await tmux.waitFor("no") { $0.contains("Enter details") }
            #expect(!refused.contains("Space check"), "the footer says what the row does: \(refused)")
            try await tmux.keys("no", "Enter")
            refused = try await tmux.waitFor("no") { $0.contains("┌ World: not sent") }
            let box = refused.replacingOccurrences(of: "│", with: "").split(separator: "\n").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.joined(separator: " ")
            #expect(box.contains("Send claim is required"), "\(refused)")
            #expect(box.contains("BREAKING_NEWS_SEND_CONNECTION_STRING"), "the fix is named: \(refused)")
            #expect(!box.contains("Listen.TrackingId"), "\(refused)")
        }
    }

    /// The command line says a refused send's error once, on one line, with its fix.
    @Test func theCommandLineSaysAnErrorOnceOnOneLine() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            let sent = try await user.run(["send", "hi", "--category", "World", "--category", "Sports"])
            #expect(sent.status == 4)
            #expect(sent.stdout == "World      failed\nSports     failed\n", "\(sent.stdout)")
            #expect(sent.stderrLines.count == 1, "\(sent.stderr)")
            let all = sent.stdout + sent.stderr
            #expect(all.components(separatedBy: "Send claim is required").count == 2, "once: \(all)")
            #expect(all.components(separatedBy: "TrackingId").count == 2, "its tracking id once: \(all)")
            #expect(!all.contains("Listen.TrackingId"), "\(all)")
            #expect(sent.stderr.contains("BREAKING_NEWS_SEND_CONNECTION_STRING"), "\(sent.stderr)")
        }
    }

    /// A full hub answers 403 too, but that is not the key's fault: the command says what is
    /// full, names no key or rights, and exits 5 (input rejected), not 4 (refused by auth).
    @Test func aFullHubIsNotBlamedOnTheKey() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory(), arguments: ["--max-installations", "1"]) { hub in
            let extra = ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description]
            #expect(try await Command.freshHome(extra: extra).run(["subscribe", "World"]).status == 0)
            let second = try await Command.freshHome(extra: extra).run(["subscribe", "World"])
            #expect(second.status == 5, "\(second.stderr)")
            #expect(second.stderr.contains("the hub answered 403"), "\(second.stderr)")
            #expect(second.stderr.contains("the most it may"), "what is full is said: \(second.stderr)")
            #expect(!second.stderr.contains("CONNECTION_STRING"), "no key to blame: \(second.stderr)")
            #expect(!second.stderr.contains("rights"), "\(second.stderr)")
        }
    }
}
