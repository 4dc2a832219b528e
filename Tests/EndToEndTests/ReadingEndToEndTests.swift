import Foundation
import HubTestSupport
import NotificationHubs
import Testing

/// Issue 28, finding 2: reading never changes state behind the user's back.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct ReadingEndToEndTests {
    /// `log --json > /dev/null` in a status-bar script leaves the open window's unread count
    /// as it was; `log --mark-read` is how a script marks what it printed.
    @Test func aScriptsLogLeavesTheWindowsUnreadAlone() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("w", of: user, hub: hub.listen)
            let client = try HubClient(connectionString: hub.full)
            for i in 0..<3 {
                _ = try await client.send(.template(["messageParam": "Breaking World News : n\(i)"]), tagExpression: "World")
            }
            try await tmux.waitFor("w") { $0.contains("3 Log (3)") }
            for arguments in [["log", "--json"], ["log"]] {
                let listed = try await user.run(arguments)
                #expect(listed.status == 0, "\(arguments): \(listed.stderr)")
            }
            // Something the window surely shows once it has looked at the home again: after
            // it, the window has seen whatever the listings did to the marks.
            #expect(try await user.run(["subscribe", "World", "Sports"]).status == 0)
            var screen = try await tmux.waitFor("w") { $0.contains("[  ON ] Sports") }
            #expect(screen.contains("3 Log (3)"), "listing read nothing: \(screen)")

            // Asked to, a listing marks what it printed.
            let marked = try await user.run(["log", "--mark-read", "--category", "World"])
            #expect(marked.stdout.split(separator: "\n").count == 3)
            screen = try await tmux.waitFor("w") { $0.contains("2 Compose    3 Log\n") }
        }
    }

    /// A home with four messages, World three and Sports one, all unread.
    static func withFourMessages(_ body: (Command) async throws -> Void) async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            #expect(try await user.run(["subscribe", "World", "Sports"]).status == 0)
            let client = try HubClient(connectionString: hub.full)
            for (tag, text) in [("World", "w1"), ("Sports", "s1"), ("World", "w2"), ("World", "w3")] {
                _ = try await client.send(.template(["messageParam": "Breaking \(tag) News : \(text)"]), tagExpression: tag)
            }
            // The hub delivers after it answered the send: looked for until all four are in.
            for _ in 0..<100 {
                let listed = try await user.run(["log", "--json"])
                if listed.stdout.split(separator: "\n").count == 4 { break }
                try await Task.sleep(nanoseconds: 100_000_000)
            }
            try await body(user)
        }
    }

    static func texts(_ user: Command, _ arguments: [String]) async throws -> [String] {
        let result = try await user.run(arguments + ["--json"])
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return result.stdout.split(separator: "\n").compactMap { try? JSONValue(parsing: String($0))["text"]?.stringValue }
    }

    /// `categories --json` carries the unread counts, per category and in all.
    @Test func categoriesJSONCarriesTheUnreadCounts() async throws {
        try await Self.withFourMessages { user in
            let counts = try JSONValue(parsing: try await user.run(["categories", "--json"]).stdout)
            #expect(counts["unreadTotal"] == .number("4"), "\(counts)")
            #expect(counts["unread"]?["World"] == .number("3") && counts["unread"]?["Sports"] == .number("1"))
            #expect(counts["unread"]?["Politics"] == .number("0"), "every category, none left out")
        }
    }

    /// `log` lists only the unread, the last N or those since a time when asked.
    @Test func logListsTheUnreadTheLastNAndThoseSinceATime() async throws {
        try await Self.withFourMessages { user in
            #expect(try await Self.texts(user, ["log"]).count == 4)
            #expect(try await Self.texts(user, ["log", "-n", "2"]) == ["Breaking World News : w2", "Breaking World News : w3"])
            #expect(
                try await Self.texts(user, ["log", "--lines", "1", "--category", "Sports"]) == ["Breaking Sports News : s1"])
            #expect(try await Self.texts(user, ["log", "--since", "1h"]).count == 4)
            #expect(try await Self.texts(user, ["log", "--since", "2099-01-01"]).isEmpty)
            // Two marked read: --unread lists the other two.
            _ = try await user.run(["log", "--mark-read", "--category", "World", "--lines", "2"])
            #expect(
                try await Self.texts(user, ["log", "--unread"]) == ["Breaking World News : w1", "Breaking Sports News : s1"])
            let counted = try JSONValue(parsing: try await user.run(["categories", "--json"]).stdout)
            #expect(counted["unreadTotal"] == .number("2"))
            let bad = try await user.run(["log", "--since", "last tuesday-ish"])
            #expect(bad.status == 2 && bad.stderr.contains("--since"), "\(bad.stderr)")
        }
    }
}
