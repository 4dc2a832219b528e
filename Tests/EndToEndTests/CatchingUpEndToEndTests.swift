import Foundation
import HubTestSupport
import NotificationHubs
import Testing

/// Issue 47 in a real window: a week of news read by the times they were sent, under a
/// separator for each day, in either order; a live send shown at its own time, not the
/// time the window opened; the unread limit walked oldest first with Space.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct CatchingUpEndToEndTests {
    /// A fixture log: `count` messages sent `spacing` hours apart up to an hour ago, all
    /// received five minutes ago (the terminal was away), from a hub other than the test's.
    static func writeWeek(into user: Command, count: Int, spacing: Double, now: Date = Date()) throws -> [Date] {
        let folder = user.home.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let received = W3CDate.format(now.addingTimeInterval(-300))
        var sent: [Date] = []
        var lines = ""
        for i in 1...count {
            let at = now.addingTimeInterval(-3600 - Double(count - i) * spacing * 3600)
            sent.append(at)
            let text = "Breaking World News : Story \(i) of the week"
            let line = JSONValue.object([
                ("id", .string("week\(i)")), ("seq", .number(String(i))), ("hub", .string("http://127.0.0.1:9/archive")),
                ("hubName", .string("archive")), ("epoch", .string("e")), ("sentAt", .string(W3CDate.format(at))),
                ("receivedAt", .string(received)), ("category", .string("World")), ("text", .string(text)),
                ("payload", .object([("aps", .object([("alert", .string(text))]))])),
            ])
            lines += line.text + "\n"
        }
        try Data(lines.utf8).write(to: folder.appendingPathComponent("inbox.jsonl"))
        return sent
    }

    static func startUI(_ tmux: Tmux, _ session: String, of user: Command, hub: HubProcess, rows: Int = 30) async throws {
        try await tmux.start(
            session: session, command: builtBinary().path,
            environment: [
                "BREAKING_NEWS_HOME": user.home.path, "BREAKING_NEWS_CONNECTION_STRING": hub.listen.description,
                "TERM": "screen", "TZ": "UTC",
            ], rows: rows)
        try await tmux.waitFor(session) { Tmux.settled($0) }
    }

    static func lines(_ screen: String) -> [String] {
        screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// UTC `HH:mm`, as the rows of other days write it.
    static func clock(_ date: Date) -> String { String(W3CDate.format(date).dropFirst(11).prefix(5)) }

    @Test func aWeekOfNewsShowsItsSendTimesUnderItsDaysInEitherOrder() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description, "TZ": "UTC"])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            // Fourteen messages twelve hours apart: a week.
            let sent = try Self.writeWeek(into: user, count: 14, spacing: 12)
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await Self.startUI(tmux, "w", of: user, hub: hub)
            try await tmux.keys("w", "3")
            var screen = try await tmux.waitFor("w") { $0.contains("14 messages") }
            var rows = Self.lines(screen)
            #expect(rows[4].hasPrefix("  Today ───"), "\(screen)")
            #expect(rows[5].contains("Story 14 of the week") && rows[5].contains("received"), "\(screen)")
            #expect(screen.contains("  Yesterday ───"), "\(screen)")
            // The oldest, a week ago, under its weekday or date, at the time it was sent.
            let oldest = try #require(rows.first { $0.contains("Story 1 of the week") }, "\(screen)")
            #expect(oldest.contains(Self.clock(sent[0])), "\(oldest)")

            try await tmux.keys("w", "O")
            screen = try await tmux.waitFor("w") { $0.contains("oldest first") }
            rows = Self.lines(screen)
            #expect(rows[5].contains("Story 1 of the week"), "\(screen)")
            #expect(!rows[4].hasPrefix("  Today"), "the oldest's day heads the page: \(screen)")
            try await tmux.keys("w", "O")
            screen = try await tmux.waitFor("w") { !$0.contains("oldest first") && $0.contains("Newest first") }
            #expect(Self.lines(screen)[5].contains("Story 14 of the week"), "\(screen)")
        }
    }

    @Test func aLiveSendShowsTheTimeItWasSentNotTheTimeTheWindowOpened() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description, "TZ": "UTC"])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            let client = try HubClient(connectionString: hub.full)
            let before = Date()
            _ = try await client.send(
                .template(["messageParam": "Breaking World News : Sent before you came"]), tagExpression: "World")
            // Held by the hub while no window is open; the window opens over a minute later.
            try await Task.sleep(for: .seconds(62))
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await Self.startUI(tmux, "late", of: user, hub: hub)
            try await tmux.keys("late", "3")
            let screen = try await tmux.waitFor("late") { $0.contains("Sent before you came") }
            let row = try #require(Self.lines(screen).first { $0.contains("Sent before you came") })
            let shown = try #require(row.split(separator: " ").first { $0.count == 8 && $0.contains(":") }.map(String.init))
            let sentAt = try #require(W3CDate.parse(String(W3CDate.format(before).prefix(11)) + shown + "Z"))
            #expect(abs(sentAt.timeIntervalSince(before)) < 5, "shown \(shown), sent at \(W3CDate.format(before)): \(screen)")
            #expect(row.contains("received"), "over a minute late, it says when it came: \(row)")
            try await tmux.keys("late", "Enter")
            let view = try await tmux.waitFor("late") { $0.contains("Sent      ") }
            #expect(view.contains("Received  "), "\(view)")
        }
    }

    @Test func theUnreadLimitOldestFirstIsWalkedOnceBySpace() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description, "TZ": "UTC"])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            _ = try Self.writeWeek(into: user, count: 12, spacing: 12)
            let tmux = Tmux()
            defer { tmux.killServer() }
            // A short window: the list has more than a page, so it shows where the cursor is.
            try await Self.startUI(tmux, "u", of: user, hub: hub, rows: 14)
            try await tmux.keys("u", "3")
            try await tmux.waitFor("u") { $0.contains("12 messages") }
            // Read two of them, then limit to the unread, oldest first.
            try await tmux.keys("u", "j")
            try await tmux.waitFor("u") { $0.contains("10 unread") }
            try await tmux.keys("u", "j")
            try await tmux.waitFor("u") { $0.contains("9 unread") }
            // One key at a time: keys that arrive at once are a paste, which the Log ignores.
            try await tmux.keys("u", "O")
            try await tmux.waitFor("u") { $0.contains("oldest first") }
            try await tmux.keys("u", "l")
            try await tmux.waitFor("u") { $0.contains("[ ] Unread only") }
            // The box opens on the category shown; Unread only is the row above.
            try await tmux.keys("u", "k")
            try await tmux.waitFor("u") { $0.contains("▸ [ ] Unread only") }
            try await tmux.keys("u", "Enter")
            var screen = try await tmux.waitFor("u") { $0.contains("unread · 9 messages") }
            #expect(screen.contains("oldest first"), "\(screen)")
            try await tmux.keys("u", "g")
            try await tmux.waitFor("u") { $0.contains("1/9") }
            // Each Space goes to the next unread, oldest first, once: 8 more, then none.
            for step in 2...9 {
                try await tmux.keys("u", "Space")
                try await tmux.waitFor("u") { $0.contains("\(step)/9") }
            }
            try await tmux.keys("u", "Space")
            screen = try await tmux.waitFor("u") { $0.contains("No unread messages") }
            #expect(
                screen.contains("9/9") && screen.contains("unread · 9 messages")
                    && !Self.lines(screen).contains { $0.hasPrefix(" ● ") }, "\(screen)")
        }
    }
}
