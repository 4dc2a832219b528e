import Foundation
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

extension Tmux {
    /// Starts the UI of `user`'s home in a new session, on the hub `connectionString` names,
    /// and waits until it has settled (online, or not registered yet).
    func startUI(_ session: String, of user: Command, hub connectionString: ConnectionString) async throws {
        try await start(
            session: session, command: builtBinary().path,
            environment: [
                "BREAKING_NEWS_HOME": user.home.path, "BREAKING_NEWS_CONNECTION_STRING": connectionString.description,
                "TERM": "screen",
            ])
        try await waitFor(session) { Tmux.settled($0) }
    }
}

/// One home, several windows: the received log is the one source every window shows
/// (issue 12, finding 1: each window used to show only what its own stream appended first).
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct SharedLogTests {
    /// Two UIs and a `log --follow` of one home, 200 sends at once: each window shows all
    /// of them, each once.
    @Test func everyWindowOfAHomeShowsEveryMessageOnce() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            let subscribed = try await user.run(["subscribe", "World"])
            #expect(subscribed.status == 0, "\(subscribed.stderr)")

            let tmux = Tmux()
            defer { tmux.killServer() }
            let windows = ["one", "two"]
            for window in windows {
                try await tmux.startUI(window, of: user, hub: hub.listen)
                try await tmux.keys(window, "3")
                try await tmux.waitFor(window) { $0.contains("all categories · 0 messages") }
            }
            let follow = try user.start(["log", "--follow", "--json"])
            defer { follow.stop() }

            let count = 200
            let client = try HubClient(connectionString: hub.full)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<count {
                    group.addTask {
                        _ = try await client.send(.template(["messageParam": "news \(i)"]), tagExpression: "World")
                    }
                }
                try await group.waitForAll()
            }

            for window in windows {
                let screen = try await tmux.waitFor(window, timeout: 30) { $0.contains("all categories · \(count) messages") }
                #expect(screen.contains("all categories · \(count) messages"), "window \(window)")
            }
            func ids(_ jsonLines: String) -> [String] {
                jsonLines.split(separator: "\n").compactMap { try? JSONValue(parsing: String($0))["text"]?.stringValue }
            }
            #expect(await follow.waitFor(timeout: 30) { out, _ in ids(out).count >= count })
            // Nothing more may come: a window that shows a message twice fails here.
            try await Task.sleep(nanoseconds: 600_000_000)
            let printed = ids(follow.stdout)
            #expect(printed.count == count)
            #expect(Set(printed) == Set((0..<count).map { "news \($0)" }))
            for window in windows {
                #expect(
                    try await tmux.capture(window).contains("all categories · \(count) messages"),
                    "window \(window) after the burst")
            }
            let log = try String(contentsOf: user.home.appendingPathComponent("data/inbox.jsonl"), encoding: .utf8)
            #expect(log.split(separator: "\n").count == count)
        }
    }

    /// A command changes what an open window shows (issue 12, finding 4): a subscribe from
    /// the shell moves the switches and the registration line, and `log --mark-read` marking
    /// messages read clears the window's unread counts.
    @Test func theOpenWindowFollowsWhatCommandsChange() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            #expect(try await user.run(["subscribe", "World", "Sports"]).status == 0)
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("ui", of: user, hub: hub.listen)
            var screen = try await tmux.waitFor("ui") { $0.contains("✓ Registered World, Sports") }
            #expect(screen.contains("[  ON ] Sports"))

            let narrowed = try await user.run(["subscribe", "World"])
            #expect(narrowed.status == 0, "\(narrowed.stderr)")
            screen = try await tmux.waitFor("ui", timeout: 5) { $0.contains("✓ Registered World at") }
            #expect(screen.contains("[  ON ] World"))
            #expect(screen.contains("[ OFF ] Sports"))
            #expect(!screen.contains("Unsaved changes"))

            let client = try HubClient(connectionString: hub.full)
            for i in 0..<3 {
                _ = try await client.send(.template(["messageParam": "Breaking World News : n\(i)"]), tagExpression: "World")
            }
            screen = try await tmux.waitFor("ui") { $0.contains("3 unread") }
            let read = try await user.run(["log", "--mark-read"])
            #expect(read.status == 0, "\(read.stderr)")
            screen = try await tmux.waitFor("ui", timeout: 5) { !$0.contains("unread") }
            #expect(!screen.contains("3 Log (3)"))
        }
    }
}

/// Compose as a fast typist uses it (issue 12, finding 2).
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct ComposeEndToEndTests {
    /// Text typed straight after Enter, while the send is under way, stays in the field.
    @Test func whatIsTypedDuringASendIsKept() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("c", of: user, hub: hub.full)
            try await tmux.keys("c", "2")
            try await tmux.waitFor("c") { $0.contains("Send breaking news") }
            try await tmux.keys("c", "Escape", "Space", "Up")
            try await tmux.waitFor("c") { $0.contains("[x] World") }
            // Typed right behind Enter, once the send is under way. (Not in Enter's own burst:
            // text that comes at once with a line break inside is a paste, never a send.)
            _ = try await tmux.run(["send-keys", "-t", "=c:", "-l", "gamma"])
            _ = try await tmux.run(["send-keys", "-t", "=c:", "Enter"])
            try await tmux.waitFor("c") { $0.contains("[ Sending… ]") || $0.contains("✓ sent") }
            _ = try await tmux.run(["send-keys", "-t", "=c:", "-l", "delta"])
            let screen = try await tmux.waitFor("c") { $0.contains("✓ sent") && $0.contains("▏delta") }
            #expect(screen.contains("5/1024 bytes"), "\(screen)")
        }
    }

    /// A multi-line paste lands in the field as text (bracketed paste), sends nothing, and
    /// the unsent draft is there again after quitting and starting anew.
    @Test func aPasteIsTextAndTheDraftSurvivesQuitting() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("p", of: user, hub: hub.full)
            try await tmux.keys("p", "2")
            try await tmux.waitFor("p") { $0.contains("Send breaking news") }
            try await tmux.type("p", "draft ")
            _ = try await tmux.run(["set-buffer", "-b", "news", "line one\nline two"])
            _ = try await tmux.run(["paste-buffer", "-p", "-b", "news", "-t", "=p:"])
            var screen = try await tmux.waitFor("p") { $0.contains("▏draft line one\n  ▏line two") }
            #expect(!screen.contains("✓ sent") && !screen.contains("Cannot send"), "a paste sends nothing")
            try await tmux.keys("p", "Tab", "q")
            screen = try await tmux.waitFor("p") { $0.contains("exit=") }
            #expect(screen.contains("exit=0"))

            try await tmux.startUI("p2", of: user, hub: hub.full)
            try await tmux.keys("p2", "2")
            screen = try await tmux.waitFor("p2") { $0.contains("▏draft line one\n  ▏line two") }
            #expect(screen.contains("23/1024 bytes"))
        }
    }

    /// Editing as in a shell (issue 12, finding 3): Backspace removes the flag the user sees,
    /// not one of its two code points; Alt-B and Ctrl-W work by words.
    @Test func editingWorksOnWhatTheUserSees() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("e", of: user, hub: hub.full)
            try await tmux.keys("e", "2")
            try await tmux.waitFor("e") { $0.contains("Send breaking news") }
            try await tmux.type("e", "x🇫🇷")
            try await tmux.keys("e", "BSpace")
            try await tmux.type("e", "|alpha beta gamma")
            try await tmux.keys("e", "M-b", "C-w")
            let screen = try await tmux.waitFor("e") { $0.contains("▏x|alpha gamma") }
            #expect(screen.contains("13/1024 bytes"), "\(screen)")
        }
    }
}
