import Foundation
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

/// Read state that means something (issue 12, finding 5), in two windows of one home.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct ReadStateEndToEndTests {
    /// A message is read where the cursor went, not because the log was on screen or left;
    /// Space, u and A do what the help says; every window of the home counts the same.
    @Test func messagesAreReadWhereTheCursorWentAndEveryWindowCountsTheSame() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("one", of: user, hub: hub.listen)
            try await tmux.startUI("two", of: user, hub: hub.listen)

            let client = try HubClient(connectionString: hub.full)
            for i in 0..<30 {
                _ = try await client.send(.template(["messageParam": "Breaking World News : item \(i)"]), tagExpression: "World")
            }
            for window in ["one", "two"] { try await tmux.waitFor(window) { $0.contains("3 Log (30)") } }

            // Landing on the log reads the newest only; four steps down read four more.
            try await tmux.keys("one", "3")
            try await tmux.waitFor("one") { $0.contains("30 messages · 29 unread") }
            try await tmux.keys("one", "j", "j", "j", "j")
            try await tmux.waitFor("one") { $0.contains("30 messages · 25 unread") }
            // Leaving reads nothing more; the other window counts the same.
            try await tmux.keys("one", "1")
            try await tmux.waitFor("one") { $0.contains("3 Log (25)") && $0.contains("25 unread") }
            try await tmux.waitFor("two") { $0.contains("3 Log (25)") }

            // The other window: Space goes to the next unread (item 24, below the five read).
            try await tmux.keys("two", "3")
            try await tmux.waitFor("two") { $0.contains("30 messages · 25 unread") }
            // Both in one wait: a capture may catch the new title above the old frame's
            // position row (tmux gets a frame in pieces), which failed once under load.
            try await tmux.keys("two", "Space")
            var screen = try await tmux.waitFor("two") { $0.contains("30 messages · 24 unread") && $0.contains("6/30") }
            // u makes it unread again, A reads everything shown: more than a screenful, so
            // it asks first (issue 45), and Enter answers.
            try await tmux.keys("two", "u")
            try await tmux.waitFor("two") { $0.contains("30 messages · 25 unread") }
            try await tmux.waitFor("one") { $0.contains("3 Log (25)") }
            try await tmux.keys("two", "A")
            try await tmux.waitFor("two") { $0.contains("Mark 25 messages read?") }
            try await tmux.keys("two", "Enter")
            screen = try await tmux.waitFor("two") { $0.contains("30 messages") && !Self.countsUnread($0) }
            try await tmux.waitFor("one") { $0.contains("2 Compose    3 Log\n") && !Self.countsUnread($0) }

            // Marks are kept: a new window of the home starts with none unread.
            try await tmux.keys("two", "q")
            try await tmux.startUI("three", of: user, hub: hub.listen)
            screen = try await tmux.waitFor("three") { $0.contains("● online") }
            #expect(screen.contains("2 Compose    3 Log\n") && !Self.countsUnread(screen), "\(screen)")
        }
    }

    /// Whether a screen counts unread messages ("24 unread"; the footer's "next unread" is a key).
    static func countsUnread(_ screen: String) -> Bool {
        screen.range(of: "[0-9]+ unread", options: .regularExpression) != nil
    }
}
