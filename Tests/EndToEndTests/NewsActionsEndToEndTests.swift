import Foundation
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

/// News you can act on, and a terminal made your own (issue 33), in the real UI inside tmux:
/// a link opened through `$BROWSER`, a copy into tmux's buffer, a pipe to a command; and
/// `config.json`'s key bindings, with a bad entry reported.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct NewsActionsEndToEndTests {
    /// A link whose text is shell syntax: a shell anywhere on its way would create `pwned`.
    static let hostile = "https://source.example/a;$(touch${IFS}pwned)`touch${IFS}pwned2`"
    static let twoLinks = "Storm live: https://news.example/live and the report \(hostile) here."

    /// The UI of `user` in `session`, started in `folder` (its working directory) with `extra`
    /// in its environment, settled with its hub.
    static func startUI(
        _ tmux: Tmux, _ session: String, of user: Command, hub: HubProcess, in folder: URL, extra: [String: String] = [:]
    ) async throws {
        var environment = [
            "BREAKING_NEWS_HOME": user.home.path, "BREAKING_NEWS_CONNECTION_STRING": hub.listen.description, "TERM": "screen",
        ]
        environment.merge(extra) { $1 }
        let exports = environment.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
        let script = "env \(exports) \(try builtBinary().path); echo exit=$?; sleep 600"
        try await tmux.run(["new-session", "-d", "-s", session, "-c", folder.path, "-x", "100", "-y", "30", script])
        try await tmux.waitFor(session) { Tmux.settled($0) || $0.contains("config.json") }
    }

    static func text(of file: URL) -> String { (try? String(contentsOf: file, encoding: .utf8)) ?? "" }

    /// `o` opens the link chosen among two through a `$BROWSER` script, which gets it as one
    /// argument, whole, and nothing in it runs; a message with only a `javascript:` and a
    /// `file:` link opens nothing; `y` puts the message in tmux's buffer; `|`
    /// pipes it to `wc -c` and shows the count and the exit status.
    @Test func openCopyAndPipe() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            let folder = user.home.appendingPathComponent("work")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            // The browser: writes how many arguments it got, then each on a line.
            let browser = user.home.appendingPathComponent("browser.sh")
            let opened = user.home.appendingPathComponent("opened.txt")
            try Data(
                "#!/bin/sh\nprintf '%s\\n' \"$#\" >> '\(opened.path)'\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> '\(opened.path)'; done\n"
                    .utf8
            ).write(to: browser)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: browser.path)
            let client = try HubClient(connectionString: hub.full)
            func send(_ text: String) async throws {
                _ = try await client.send(.template(["messageParam": "Breaking World News : \(text)"]), tagExpression: "World")
            }

            // Hyperlinks on, whatever tmux this is (auto leaves them off inside tmux 3.3).
            try Data(#"{"hyperlinks": true}"#.utf8).write(to: user.home.appendingPathComponent("config/config.json"))
            let tmux = Tmux()
            defer { tmux.killServer() }
            // The browser is named with "%s" in a word of its own, as the convention allows.
            try await Self.startUI(tmux, "a", of: user, hub: hub, in: folder, extra: ["BROWSER": "\(browser.path) %s"])
            let raw = user.home.appendingPathComponent("pane.raw")
            try await tmux.run(["pipe-pane", "-o", "-t", "a", "cat >> '\(raw.path)'"])
            try await send("javascript:alert(1) and file:///etc/passwd")
            try await send(Self.twoLinks)
            try await tmux.keys("a", "3")
            try await tmux.waitFor("a") { $0.contains("all categories · 2 messages") }

            // The message view: time, category, id, both links.
            try await tmux.keys("a", "Enter")
            var screen = try await tmux.waitFor("a") { $0.contains("Links     2") }
            #expect(screen.contains("Category  World") && screen.contains("Id        "))
            #expect(screen.contains("https://news.example/live"))
            // Drawn as OSC 8 hyperlinks too, each over its own text.
            for link in ["https://news.example/live", Self.hostile] {
                let osc8 = "\u{1B}]8;;\(link)\u{1B}\\\(link)\u{1B}]8;;\u{1B}\\"
                try await eventually("an OSC 8 hyperlink for \(link)", every: .milliseconds(50)) {
                    Self.text(of: raw).contains(osc8)
                }
            }
            try await tmux.keys("a", "o")
            screen = try await tmux.waitFor("a") { $0.contains("Open which link?") }
            #expect(screen.contains("1 https://news.example/live"), "\(screen)")
            try await tmux.keys("a", "2")
            try await tmux.waitFor("a") { $0.contains("Opened https://source.example/a;$(touch${IFS}pwned)") }
            #expect(Self.text(of: opened) == "1\n\(Self.hostile)\n", "one argument, whole")
            for name in ["pwned", "pwned2"] {
                #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path), "\(name) ran")
                #expect(!FileManager.default.fileExists(atPath: user.home.appendingPathComponent(name).path), "\(name) ran")
            }

            // y: the whole message (line 1 of the choice), into tmux's buffer (issue 50: stock
            // tmux drops a passthrough OSC 52).
            try await tmux.keys("a", "y")
            try await tmux.waitFor("a") { $0.contains("Copy what?") }
            try await tmux.keys("a", "1")
            try await tmux.waitFor("a") { $0.contains("Copied the message to tmux's buffer") }
            let message = "Breaking World News : \(Self.twoLinks)"
            #expect(try await tmux.run(["show-buffer"]) == message)

            // |: the message and a line feed on wc's standard input; its output and status shown.
            try await tmux.keys("a", "|")
            try await tmux.waitFor("a") { $0.contains("| command: ") }
            try await tmux.type("a", "wc -c")
            try await tmux.keys("a", "Enter")
            screen = try await tmux.waitFor("a") { $0.contains("[wc -c: exit status 0] Press Enter") }
            let count = "\(message.utf8.count + 1)"
            #expect(screen.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == count }, "\(screen)")
            try await tmux.keys("a", "Enter")
            screen = try await tmux.waitFor("a") { $0.contains("Piped to wc -c: exit status 0") }
            #expect(screen.contains("Links     2"), "the message view is back: \(screen)")

            // The other message: a javascript: and a file: link are no links to open.
            try await tmux.keys("a", "Escape", "j")
            try await tmux.waitFor("a") { $0.contains("2/2") || !$0.contains("┌") }
            try await tmux.keys("a", "o")
            try await tmux.waitFor("a") { $0.contains("No http or https link in this message") }
            #expect(Self.text(of: opened) == "1\n\(Self.hostile)\n", "nothing else was opened")
            try await tmux.keys("a", "q")
            #expect(try await tmux.waitFor("a") { $0.contains("exit=") }.contains("exit=0"))
        }
    }

    /// A config.json binding x to quit and J/K to move: they work, and the footer and the
    /// help show them. A config.json with bad entries: each reported with the file, the entry
    /// and the reason, and the program runs on the defaults.
    @Test func keyBindingsFromConfigJSON() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            let config = user.home.appendingPathComponent("config/config.json")
            try Data(#"{"keys": {"quit": "x", "down": ["J"], "up": "K"}}"#.utf8).write(to: config)
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await Self.startUI(tmux, "k", of: user, hub: hub, in: user.home)
            var screen = try await tmux.waitFor("k") { $0.contains("K up  J down") }
            #expect(screen.contains("x quit") && !screen.contains("q quit"), "\(screen)")
            #expect(screen.contains("▸ [  ON ] World"))
            try await tmux.keys("k", "J")
            try await tmux.waitFor("k") { $0.contains("▸ [ OFF ] Politics") }
            try await tmux.keys("k", "j")
            try await tmux.keys("k", "K")
            try await tmux.waitFor("k") { $0.contains("▸ [  ON ] World") }
            try await tmux.keys("k", "?")
            screen = try await tmux.waitFor("k") { $0.contains("┌ Keys") }
            #expect(screen.contains("x              quit (Ctrl-C too"), "\(screen)")
            #expect(screen.contains("J              move down") && screen.contains("K              move up"), "\(screen)")
            try await tmux.keys("k", "Escape")
            try await tmux.waitFor("k") { !$0.contains("┌ Keys") }
            try await tmux.keys("k", "q")
            try await tmux.keys("k", "x")
            #expect(try await tmux.waitFor("k") { $0.contains("exit=") }.contains("exit=0"))

            // Bad entries: reported, and the defaults run.
            try Data(#"{"keys": {"quit": "F13", "dwon": "J"}, "colors": "sepia"}"#.utf8).write(to: config)
            try await Self.startUI(tmux, "b", of: user, hub: hub, in: user.home)
            screen = try await tmux.waitFor("b") { $0.contains("config.json: entries refused") }
            // The box's text, its wrapping undone: what is between its borders, no spaces.
            let boxed = screen.split(separator: "\n").compactMap { line -> String? in
                guard let first = line.firstIndex(of: "│"), let last = line.lastIndex(of: "│"), first < last else { return nil }
                return String(line[line.index(after: first)..<last])
            }.joined().filter { $0 != " " }
            let file = user.home.appendingPathComponent("config/config.json").path.filter { $0 != " " }
            for problem in [
                "\(file): colors: must be \"default\" or \"light\"", "\(file): keys.dwon: no such action",
                "\(file): keys.quit: “F13” is not a key name",
            ] {
                #expect(boxed.contains(problem.filter { $0 != " " }), "\(problem) not in:\n\(screen)")
            }
            try await tmux.keys("b", "Enter")
            screen = try await tmux.waitFor("b") { $0.contains("↑/k up  ↓/j down") }
            #expect(screen.contains("q quit"))
            try await tmux.keys("b", "j")
            try await tmux.waitFor("b") { $0.contains("▸ [ OFF ] Politics") }
            try await tmux.keys("b", "q")
            #expect(try await tmux.waitFor("b") { $0.contains("exit=") }.contains("exit=0"))
        }
    }
}
