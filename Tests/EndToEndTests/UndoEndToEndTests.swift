import Foundation
import HubTestSupport
import NotificationHubs
import Testing

/// Issue 45: undo that goes all the way back, and a deleted view that restores from any
/// window of the home. Each key is sent once the one before has shown its effect.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct UndoEndToEndTests {
    /// Three deletes and an `A`, then four `z`: every message is back and the read marks
    /// are as before the `A`, in the window and on disk.
    @Test func threeDeletesAndAnAAreAllUndone() async throws {
        try await LogScreenEndToEndTests.withLog { tmux, user, client in
            for text in ["one", "two", "three", "four", "five"] { try await LogScreenEndToEndTests.send(client, text) }
            try await tmux.waitFor("l", timeout: 30) { $0.contains("all categories · 5 messages · 5 unread") }
            // The cursor on the newest reads it. (A toast covers the list's title: the tab
            // counts the unread.)
            try await tmux.keys("l", "g")
            try await tmux.waitFor("l", timeout: 30) { $0.contains("3 Log (4)") }
            // Each step waits for what stays on screen (the rows, the tab's count): a toast lasts
            // five seconds, which a loaded machine can let pass between two captures.
            func rows(_ screen: String) -> [String] {
                screen.split(separator: "\n").dropFirst(4).map { $0.trimmingCharacters(in: .whitespaces) }
            }
            func listed(_ text: String, _ screen: String) -> Bool { rows(screen).contains { $0.hasSuffix(" \(text)") } }
            for (text, unread) in [("five", 4), ("four", 3), ("three", 2)] {
                try await tmux.keys("l", "x")
                try await tmux.waitFor("l", timeout: 30) { !listed(text, $0) && $0.contains("3 Log (\(unread))") }
            }
            try await tmux.keys("l", "A")
            try await tmux.waitFor("l", timeout: 30) { $0.contains("3 Log\n") }
            // z, and what is back: the A's two unread, then three, four and five.
            let undone: [(String, (String) -> Bool)] = [
                ("Undone: 2 unread again · 3 more to undo", { $0.contains("3 Log (2)") && !listed("three", $0) }),
                ("Undone: “three” is back · 2 more to undo", { $0.contains("3 Log (3)") && listed("three", $0) }),
                ("Undone: “four” is back · 1 more to undo", { $0.contains("3 Log (4)") && listed("four", $0) }),
                ("Undone: “five” is back", { $0.contains("3 Log (4)") && listed("five", $0) }),
            ]
            for (toast, back) in undone {
                try await tmux.keys("l", "z")
                let screen = try await tmux.waitFor("l", timeout: 30, back)
                // The toast, where the capture caught it, says what came back.
                #expect(!screen.contains("Undone:") || screen.contains(toast), "\(screen)")
            }
            // Once the toast has gone, the title.
            try await tmux.waitFor("l", timeout: 30) { $0.contains("all categories · 5 messages · 4 unread") }
            // Nothing more: a fifth z changes nothing (its toast is the reducer tests').
            try await tmux.keys("l", "z")
            try await tmux.waitFor("l", timeout: 30) {
                $0.contains("Nothing to undo") || $0.contains("all categories · 5 messages · 4 unread")
            }
            let counts = try JSONValue(parsing: try await user.run(["categories", "--json"]).stdout)
            #expect(counts["unreadTotal"] == .number("4"), "on disk too: \(counts)")
            let log = try await user.run(["log"]).stdout
            for text in ["one", "two", "three", "four", "five"] { #expect(log.contains(text), "\(log)") }
        }
    }

    /// A message deleted in one window is listed by the deleted view of another window of
    /// the home, and `u` there brings it back in both (and for `log`).
    @Test func aMessageDeletedInOneWindowIsRestoredFromAnother() async throws {
        try await LogScreenEndToEndTests.withLog(windows: ["a", "b"]) { tmux, user, client in
            for text in ["keep me", "gone for now"] { try await LogScreenEndToEndTests.send(client, text) }
            for window in ["a", "b"] {
                try await tmux.waitFor(window, timeout: 30) { $0.contains("all categories · 2 messages") }
            }
            try await tmux.keys("a", "g")
            try await tmux.waitFor("a", timeout: 30) { $0.contains("2 messages · 1 unread") }
            try await tmux.keys("a", "x")
            try await tmux.waitFor("b", timeout: 30) { $0.contains("all categories · 1 message") }
            #expect(!(try await user.run(["log"])).stdout.contains("gone for now"))

            try await tmux.keys("b", "D")
            var screen = try await tmux.waitFor("b", timeout: 30) {
                $0.contains("Deleted   1 deleted message, newest first · u or Enter restores · D or Esc back to the log")
            }
            #expect(screen.contains("gone for now") && !screen.contains("keep me"), "\(screen)")
            try await tmux.keys("b", "u")
            // Its toast ("Restored … in every window") may pass unseen on a loaded machine; the
            // other window's list stays.
            screen = try await tmux.waitFor("a", timeout: 30) { $0.contains("all categories · 2 messages") }
            #expect(screen.contains("gone for now"), "\(screen)")
            #expect((try await user.run(["log"])).stdout.contains("gone for now"))
            try await tmux.keys("b", "Escape")
            try await tmux.waitFor("b", timeout: 30) { $0.contains("all categories · 2 messages") && $0.contains("gone for now") }
            // The window that deleted it has nothing left to undo: it is back already.
            try await tmux.keys("a", "z")
            try await tmux.waitFor("a", timeout: 30) {
                $0.contains("Nothing to undo") || $0.contains("all categories · 2 messages")
            }
            #expect((try await user.run(["log"])).stdout.contains("gone for now"), "z deleted nothing again")
        }
    }
}
