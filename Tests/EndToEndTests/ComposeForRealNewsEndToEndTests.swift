import Foundation
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

/// Compose for real news (issue 50), in the real UI inside tmux with its default options:
/// several lines, the user's editor, the history of sends, tmux's buffer, and the counter
/// counting what is sent.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct ComposeForRealNewsEndToEndTests {
    @Test func linesEditorHistoryClipboardAndTheLimit() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            // The editor: a script of the test's own, which writes its text into the file it
            // is given, as an editor saves.
            let editor = user.home.appendingPathComponent("editor.sh")
            // It takes its time, as a person does: the note after it is timed from its end.
            try Data("#!/bin/sh\nsleep 6\nprintf 'From the editor: coast road closed\\n' > \"$1\"\n".utf8).write(to: editor)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: editor.path)
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUIOnItsOwnHub("c", of: user, extra: ["EDITOR": editor.path, "VISUAL": ""])

            // Three lines, typed with Alt-Enter between them; Enter sends them.
            try await tmux.keys("c", "2")
            for (i, line) in ["Quake hits coast", "Magnitude revised to 7.1", "Tsunami warning lifted"].enumerated() {
                if i > 0 { try await tmux.keys("c", "M-Enter") }
                try await tmux.type("c", line)
            }
            try await tmux.waitFor("c") {
                $0.contains("▏Quake hits coast\n  ▏Magnitude revised to 7.1\n  ▏Tsunami warning lifted")
            }
            try await tmux.keys("c", "Escape")
            try await tmux.keys("c", "Space", "Up", "Enter")
            try await tmux.waitFor("c") { $0.contains("World       ✓ sent") }
            // It arrives as three lines: the message view shows each on its own.
            try await tmux.keys("c", "Tab")
            try await tmux.waitFor("c") { $0.contains("Quake hits coast") }
            try await tmux.keys("c", "Enter")
            let view = try await tmux.waitFor("c") { $0.contains("Category  World") }
            let lines = view.split(separator: "\n").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " │")) }
            #expect(lines.contains("Breaking World News : Quake hits coast"), "\(view)")
            #expect(lines.contains("Magnitude revised to 7.1") && lines.contains("Tsunami warning lifted"), "\(view)")
            try await tmux.keys("c", "Escape")
            try await tmux.keys("c", "2")

            // ↑ in the emptied field recalls the send, all three lines; Ctrl-N gives the empty
            // draft back.
            try await tmux.keys("c", "Up")
            try await tmux.waitFor("c") { $0.contains("▏Quake hits coast\n  ▏Magnitude revised to 7.1") }
            try await tmux.keys("c", "C-n")
            try await tmux.waitFor("c") { !$0.contains("▏Quake hits coast") && $0.contains("0/1024 bytes") }

            // Ctrl-X Ctrl-E: the editor's text in the field, and sent (World is still checked).
            try await tmux.keys("c", "C-x", "C-e")
            try await tmux.waitFor("c") {
                $0.contains("▏From the editor: coast road closed\n  ▏\n") && $0.contains("as your editor saved it")
            }
            try await tmux.keys("c", "Enter")
            try await tmux.waitFor("c") { $0.contains("✓ sent") && $0.contains("0/1024 bytes") }
            try await eventually("the editor's send in the log") {
                (try? await user.run(["log"]).stdout.contains("From the editor: coast road closed")) == true
            }

            // 1,024 bytes are sent; 1,025 are refused, with the count the screen showed.
            try await tmux.type("c", String(repeating: "a", count: 1023) + "é")
            var screen = try await tmux.waitFor("c") { $0.contains("1025/1024 bytes") }
            try await tmux.keys("c", "Enter")
            screen = try await tmux.waitFor("c") { $0.contains("Cannot send: the message is 1025 bytes; at most 1024") }
            #expect(screen.contains("1025/1024 bytes"), "\(screen)")
            try await tmux.keys("c", "BSpace")
            try await tmux.type("c", "b")
            try await tmux.waitFor("c") { $0.contains("1024/1024 bytes") && !$0.contains("Cannot send") }
            try await tmux.keys("c", "Enter")
            try await tmux.waitFor("c") { $0.contains("✓ sent") && $0.contains("0/1024 bytes") }

            // y inside tmux, its default options: the link goes into tmux's buffer.
            let client = try HubClient(connectionString: hub.full)
            _ = try await client.send(
                .template(["messageParam": "Breaking World News : Live: https://news.example/live"]), tagExpression: "World")
            try await tmux.keys("c", "Tab")
            try await tmux.waitFor("c") { $0.contains("Live: https://news.example/live") }
            try await tmux.keys("c", "g", "y")
            try await tmux.waitFor("c") { $0.contains("Copy what?") }
            try await tmux.keys("c", "2")
            try await tmux.waitFor("c") { $0.contains("Copied the link to tmux's buffer") }
            #expect(try await tmux.run(["show-buffer"]) == "https://news.example/live")
        }
    }
}
