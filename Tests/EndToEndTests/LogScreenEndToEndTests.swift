import Foundation
import HubTestSupport
import NotificationHubs
import Testing

/// Issue 28, findings 5 and 8: a log that follows, messages that can be deleted, search and
/// filter that answer.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct LogScreenEndToEndTests {
    /// A home subscribed to World and Sports, its window open on the Log, on a hub of its own.
    static func withLog(
        windows: [String] = ["l"], _ body: (Tmux, Command, HubClient) async throws -> Void
    ) async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            #expect(try await user.run(["subscribe", "World", "Sports"]).status == 0)
            let tmux = Tmux()
            defer { tmux.killServer() }
            for window in windows {
                try await tmux.startUI(window, of: user, hub: hub.listen)
                try await tmux.keys(window, "3")
                try await tmux.waitFor(window) { $0.contains("Received") }
            }
            try await body(tmux, user, try HubClient(connectionString: hub.full))
        }
    }

    static func send(_ client: HubClient, _ text: String, to category: String = "World") async throws {
        _ = try await client.send(.template(["messageParam": "Breaking \(category) News : \(text)"]), tagExpression: category)
    }

    /// Finding 5: with the cursor on the newest, 25 arrivals later it is still on the newest,
    /// on screen; with the cursor elsewhere, the view stays and a marker counts what came.
    @Test func theLogFollowsTheNewestAsTailDoes() async throws {
        try await Self.withLog { tmux, _, client in
            try await Self.send(client, "item 0")
            try await tmux.waitFor("l") { $0.contains("item 0") }
            for i in 1...25 {
                try await Self.send(client, "item \(i)")
                // One at a time, as news comes.
                try await tmux.waitFor("l") { $0.contains("all categories · \(i + 1) messages") }
            }
            var screen = try await tmux.waitFor("l") { $0.contains("1/26") }
            let list = screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(list[5].contains("item 25"), "the newest is the first row: \(screen)")

            // Away from the newest: what is on screen stays, a marker counts the new.
            try await tmux.keys("l", "j", "j")
            try await tmux.waitFor("l") { $0.contains("3/26") }
            for i in 26...28 { try await Self.send(client, "item \(i)") }
            screen = try await tmux.waitFor("l") { $0.contains("↑ 3 new above") }
            #expect(screen.contains("6/29"), "the cursor stayed on its message: \(screen)")
            try await tmux.keys("l", "g")
            screen = try await tmux.waitFor("l") { $0.contains("1/29") }
            let top = screen.split(separator: "\n", omittingEmptySubsequences: false)[5]
            #expect(!screen.contains("new above") && top.contains("item 28"), "\(screen)")
        }
    }

    /// Finding 5: x deletes the message under the cursor, in every window of the home and
    /// for `log`; z brings it back.
    @Test func aMessageCanBeDeletedEverywhereAndBroughtBack() async throws {
        try await Self.withLog(windows: ["a", "b"]) { tmux, user, client in
            for text in ["keep one", "delete me", "keep two"] { try await Self.send(client, text) }
            for window in ["a", "b"] { try await tmux.waitFor(window) { $0.contains("all categories · 3 messages") } }
            // The cursor on "delete me", the second newest.
            try await tmux.keys("a", "g", "j")
            try await tmux.keys("a", "x")
            var screen = try await tmux.waitFor("a") { $0.contains("Deleted “delete me” · z undoes") }
            // The list, not the footer's row, where the note says what was deleted.
            let listed = screen.split(separator: "\n").dropFirst(4).filter { $0.contains("delete me") && !$0.hasPrefix(" ▶") }
            #expect(listed.isEmpty, "\(screen)")
            screen = try await tmux.waitFor("b") { $0.contains("all categories · 2 messages") }
            #expect(!screen.contains("delete me"), "\(screen)")
            #expect(!(try await user.run(["log"])).stdout.contains("delete me"))
            try await tmux.keys("a", "z")
            for window in ["a", "b"] { try await tmux.waitFor(window) { $0.contains("all categories · 3 messages") } }
            #expect((try await user.run(["log"])).stdout.contains("delete me"))
        }
    }

    /// Finding 8: a search counts its matches and says "no match"; n with nothing found
    /// says so.
    @Test func searchCountsItsMatches() async throws {
        try await Self.withLog { tmux, _, client in
            for text in ["election night", "election results", "Rates hold"] { try await Self.send(client, text) }
            try await tmux.waitFor("l") { $0.contains("all categories · 3 messages") }
            try await tmux.keys("l", "/")
            try await tmux.type("l", "zzz")
            try await tmux.waitFor("l") { $0.contains("no match") }
            try await tmux.keys("l", "Escape")
            try await tmux.keys("l", "/")
            try await tmux.type("l", "ELECTION")
            // The cursor goes to the first match, and the title says which of them it is on.
            let screen = try await tmux.waitFor("l") { $0.contains("of 2") }
            #expect(screen.contains("search “ELECTION” · 1 of 2"), "\(screen)")
            try await tmux.keys("l", "Escape")
            try await tmux.keys("l", "/")
            try await tmux.type("l", "nowhere")
            try await tmux.keys("l", "Enter")
            try await tmux.waitFor("l") { !$0.contains("▏") }
            try await tmux.keys("l", "n")
            try await tmux.waitFor("l") { $0.contains("No match for “nowhere”") }
        }
    }

    /// Finding 8: `election` finds `Élection` (any case, any accent): the search ends on it,
    /// and Enter opens it.
    @Test func searchIgnoresAccents() async throws {
        try await Self.withLog { tmux, _, client in
            for text in ["Élection night", "Rates hold"] { try await Self.send(client, text) }
            try await tmux.waitFor("l") { $0.contains("all categories · 2 messages") }
            // From the newest, "Rates hold".
            try await tmux.keys("l", "g")
            try await tmux.keys("l", "/")
            try await tmux.type("l", "election")
            try await tmux.waitFor("l") { $0.contains("search “election”") }
            try await tmux.keys("l", "Enter")
            try await tmux.waitFor("l") { !$0.contains("▏") }
            try await tmux.keys("l", "Enter")
            let screen = try await tmux.waitFor("l") { $0.contains("┌ Notification") }
            #expect(screen.contains("Breaking World News : Élection night"), "the search ended on it: \(screen)")
        }
    }

    /// Finding 8: c lists the categories that have messages, with their counts; Enter shows
    /// one; Esc shows every message again.
    @Test func theFilterListsTheCategoriesWithCountsAndEscShowsAll() async throws {
        try await Self.withLog { tmux, _, client in
            for (category, text) in [("World", "w1"), ("Sports", "s1"), ("World", "w2")] {
                try await Self.send(client, text, to: category)
            }
            try await tmux.waitFor("l") { $0.contains("all categories · 3 messages") }
            try await tmux.keys("l", "c")
            var screen = try await tmux.waitFor("l") { $0.contains("┌ Show") }
            func line(_ name: String, _ counts: String) -> String {
                name.padding(toLength: "All categories".count, withPad: " ", startingAt: 0) + "  " + counts
            }
            #expect(screen.contains(line("All categories", "3 · 3 unread")), "\(screen)")
            #expect(screen.contains(line("World", "2 · 2 unread")), "\(screen)")
            #expect(screen.contains(line("Sports", "1 · 1 unread")), "\(screen)")
            #expect(!screen.contains("Politics"), "a category with no message is not offered: \(screen)")
            try await tmux.keys("l", "j", "j")
            try await tmux.keys("l", "Enter")
            screen = try await tmux.waitFor("l") { $0.contains("Sports · 1 message") }
            try await tmux.keys("l", "Escape")
            try await tmux.waitFor("l") { $0.contains("all categories · 3 messages · 3 unread") }
        }
    }

    /// Finding 8: Esc shows every message again after a filter (here: c, then j and Enter).
    @Test func escClearsTheFilter() async throws {
        try await Self.withLog { tmux, _, client in
            for (category, text) in [("World", "w1"), ("Sports", "s1")] { try await Self.send(client, text, to: category) }
            try await tmux.waitFor("l") { $0.contains("all categories · 2 messages") }
            try await tmux.keys("l", "c")
            try await tmux.keys("l", "j")
            try await tmux.keys("l", "Enter")
            try await tmux.waitFor("l") { $0.contains("World · 1 message") }
            try await tmux.keys("l", "Escape")
            try await tmux.waitFor("l") { $0.contains("all categories · 2 messages") }
        }
    }

    /// Finding 8: A reads what is shown and z undoes it, in the window and on disk.
    @Test func aIsUndoneWithZ() async throws {
        try await Self.withLog { tmux, user, client in
            for text in ["one", "two", "three"] { try await Self.send(client, text) }
            try await tmux.waitFor("l") { $0.contains("3 Log (3)") }
            try await tmux.keys("l", "A")
            try await tmux.waitFor("l") { $0.contains("Marked 3 read · z undoes") }
            try await tmux.waitFor("l") { $0.contains("2 Compose    3 Log\n") }
            try await tmux.keys("l", "z")
            try await tmux.waitFor("l") { $0.contains("3 Log (3)") }
            let counts = try JSONValue(parsing: try await user.run(["categories", "--json"]).stdout)
            #expect(counts["unreadTotal"] == .number("3"))
        }
    }

    /// Finding 8: Space with nothing unread says so.
    @Test func spaceWithNothingUnreadSaysSo() async throws {
        try await Self.withLog { tmux, _, client in
            try await Self.send(client, "only one")
            try await tmux.waitFor("l") { $0.contains("3 Log (1)") }
            // g puts the cursor on the newest again: read.
            try await tmux.keys("l", "g")
            try await tmux.waitFor("l") { $0.contains("2 Compose    3 Log\n") }
            try await tmux.keys("l", "Space")
            try await tmux.waitFor("l") { $0.contains("No unread messages") }
        }
    }
}
