import Foundation
import HubTestSupport
import NotificationHubs
import Testing

/// Issue 28, findings 1 and 7: on Compose what is typed stays text, and the program does not
/// drop or ask for things behind the user's back.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct ComposeKeysEndToEndTests {
    /// Finding 1: a story sent from the category row, then the next one typed at once — its
    /// q, b, d, a and l are letters, nothing is checked, switched or quit; coming back with
    /// 2 the keys are the field's too.
    @Test func afterASendFromTheCategoryRowTypingIsText() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("k", of: user, hub: hub.full)
            try await tmux.keys("k", "2")
            try await tmux.type("k", "Storm warning for the coast")
            try await tmux.keys("k", "Escape")
            try await tmux.keys("k", "Space")
            try await tmux.waitFor("k") { $0.contains("[x] World   [ ] Politics") }
            // Enter on the category row sends (one category: no question).
            try await tmux.keys("k", "Enter")
            try await tmux.waitFor("k") { $0.contains("✓ sent") }
            try await tmux.type("k", "quake hits coast; bad damage all along")
            var screen = try await tmux.waitFor("k") { $0.contains("▏quake hits coast; bad damage all along") }
            #expect(screen.contains("[x] World   [ ] Politics   [ ] Business"), "nothing checked: \(screen)")
            #expect(!screen.contains("exit="), "q quit nothing")
            #expect(screen.contains("Enter send  Alt-Enter new line"), "the field has the keys")
            let defaults = try String(contentsOf: user.home.appendingPathComponent("config/defaults.json"), encoding: .utf8)
            #expect(!defaults.contains("arrivalAlerts"), "b and d switched nothing: \(defaults)")

            // Away and back with 2, from the boxes: the keys are the field's again.
            try await tmux.keys("k", "Escape")
            try await tmux.keys("k", "1")
            try await tmux.waitFor("k") { $0.contains("choose the categories") }
            try await tmux.keys("k", "2")
            try await tmux.type("k", " all clear")
            screen = try await tmux.waitFor("k") { $0.contains("▏quake hits coast; bad damage all along all clear") }
            #expect(screen.contains("[x] World   [ ] Politics   [ ] Business"), "\(screen)")
            // Issue 45: on the category row a letter is text too: Escape then q types q.
            try await tmux.keys("k", "Escape")
            try await tmux.keys("k", "q")
            screen = try await tmux.waitFor("k") { $0.contains("▏quake hits coast; bad damage all along all clearq") }
            #expect(!screen.contains("exit="), "q quit nothing")
            // Still running: Tab away, then q quits, with status 0.
            try await tmux.keys("k", "Tab")
            try await tmux.keys("k", "q")
            let ended = try await tmux.waitFor("k") { $0.contains("exit=") }
            #expect(ended.contains("exit=0"))
        }
    }

    /// Finding 1: a bracketed paste while the boxes have the keys goes into the message;
    /// a multi-line paste the terminal does not bracket stays text and sends nothing.
    @Test func pastesAreTextWhereverTheyArrive() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("p", of: user, hub: hub.full)
            try await tmux.keys("p", "2")
            try await tmux.keys("p", "Escape")
            try await tmux.keys("p", "Space")
            try await tmux.waitFor("p") { $0.contains("[x] World") }
            _ = try await tmux.run(["set-buffer", "-b", "one", "bracketed words"])
            _ = try await tmux.run(["paste-buffer", "-p", "-b", "one", "-t", "=p:"])
            try await tmux.waitFor("p") { $0.contains("▏bracketed words") }
            // Without -p tmux pastes unbracketed, line breaks as carriage returns: Enter keys.
            _ = try await tmux.run(["set-buffer", "-b", "two", " first line\nsecond line"])
            _ = try await tmux.run(["paste-buffer", "-b", "two", "-t", "=p:"])
            let screen = try await tmux.waitFor("p") { $0.contains("▏bracketed words first line\n  ▏second line") }
            #expect(!screen.contains("✓ sent") && !screen.contains("Sending"), "a paste sends nothing: \(screen)")
        }
    }

    /// Finding 7: q with category changes not subscribed asks (Esc stays, q again quits);
    /// a subscribe that worked says so without a box to dismiss.
    @Test func quittingAsksAboutUnsubscribedChangesAndSubscribeNeedsNoBox() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("q", of: user, hub: hub.listen)
            try await tmux.keys("q", "Space")
            try await tmux.waitFor("q") { $0.contains("Unsaved changes") }
            try await tmux.keys("q", "q")
            var screen = try await tmux.waitFor("q") { $0.contains("Quit without subscribing?") }
            #expect(screen.contains("World on"), "\(screen)")
            try await tmux.keys("q", "Escape")
            screen = try await tmux.waitFor("q") { !$0.contains("Quit without subscribing?") }
            #expect(!screen.contains("exit="))
            try await tmux.keys("q", "s")
            screen = try await tmux.waitFor("q") { $0.contains("✓ Registered World") }
            #expect(!screen.contains("┌ Subscribed"), "no box: \(screen)")
            // The keys go on at once: j moves, no box to dismiss first.
            try await tmux.keys("q", "j")
            try await tmux.waitFor("q") { $0.contains(" ▸ [ OFF ] Politics") }

            // Nothing unsaved: q quits without a question.
            try await tmux.keys("q", "q")
            let quit = try await tmux.waitFor("q") { $0.contains("exit=") }
            #expect(quit.contains("exit=0"))

            // Changes again, in a new window: q, then q again, quits dropping them.
            try await tmux.startUI("q2", of: user, hub: hub.listen)
            try await tmux.keys("q2", "j", "Space")
            try await tmux.waitFor("q2") { $0.contains("Unsaved changes") }
            try await tmux.keys("q2", "q")
            try await tmux.waitFor("q2") { $0.contains("Quit without subscribing?") }
            try await tmux.keys("q2", "q")
            let ended = try await tmux.waitFor("q2") { $0.contains("exit=") }
            #expect(ended.contains("exit=0"))
            let defaults = try String(contentsOf: user.home.appendingPathComponent("config/defaults.json"), encoding: .utf8)
            #expect(defaults.contains(#""BreakingNewsCategories":["World"]"#), "the dropped change was not stored")
        }
    }
}
