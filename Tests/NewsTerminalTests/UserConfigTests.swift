import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

/// `config.json` (issue 33): key bindings, colours, hyperlinks, and every bad entry refused
/// with the file, the entry and the reason.
struct UserConfigTests {
    static func parse(_ json: String) -> UserConfig { UserConfig.parse(Data(json.utf8), file: "/c/config.json") }

    @Test func noFileIsTheDefaults() {
        let config = UserConfig.load(from: URL(fileURLWithPath: "/nonexistent/config.json"))
        #expect(config == UserConfig())
        #expect(config.problems.isEmpty)
    }

    @Test func xQuitsAndJKMove() {
        let config = Self.parse(#"{"keys": {"quit": "x", "down": ["J"], "up": ["K", "Up"]}}"#)
        #expect(config.problems.isEmpty)
        var state = makeState(items: (1...3).map { entry($0, "World", "news \($0)") })
        state.keyMap = config.keyMap
        _ = state.press(.character("3"))
        _ = state.press(.character("J"))
        #expect(state.log.cursor == 1)
        _ = state.press(.character("j"))
        #expect(state.log.cursor == 1, "j is no longer down")
        _ = state.press(.character("K"))
        #expect(state.log.cursor == 0)
        let footer = rendered(state).lines.last ?? ""
        #expect(footer.contains("K/↑ up  J down"), "\(footer)")
        #expect(footer.contains("x quit"), "\(footer)")
        // x left delete (Del stays), and shows so in the help.
        _ = state.press(.character("?"))
        var help = rendered(state).text
        #expect(help.contains("x            quit (Ctrl-C too)") || help.contains("x  "), "\(help)")
        _ = state.press(.pageDown)
        help += rendered(state).text
        #expect(help.contains("Del") && !help.contains("x/Del"), "\(help)")
        _ = state.press(.escape)
        #expect(state.press(.character("x")) == [.quit])
    }

    @Test func printableBindingsNeverApplyInTheMessageField() {
        let config = Self.parse(#"{"keys": {"quit": ["x"], "down": ["J"], "help": ["h"]}}"#)
        var state = makeState()
        state.keyMap = config.keyMap
        _ = state.press(.character("2"))
        #expect(state.isEditingText)
        #expect(state.type("xJh") == [])
        #expect(String(state.compose.text) == "xJh")
        #expect(!state.quitting && !state.showHelp)
    }

    @Test func unbindingAndSeveralKeys() {
        let config = Self.parse(#"{"keys": {"delete": [], "quit": ["x", "Q", "Ctrl-X"]}}"#)
        #expect(config.problems.isEmpty)
        #expect(config.keyMap.command(for: .delete, on: .log) == nil)
        #expect(config.keyMap.command(for: .character("x"), on: .log) == .quit)
        #expect(config.keyMap.command(for: .control("x"), on: .log) == .quit)
        #expect(config.keyMap.command(for: .character("q"), on: .log) == nil)
        #expect(!config.keyMap.helpLines.contains { $0.summary.hasPrefix("delete the message") })
        #expect(config.keyMap.helpLines.contains { $0.label == "x/Q/Ctrl-X" && $0.summary.hasPrefix("quit (Ctrl-C too") })
    }

    @Test(arguments: [
        ("[1]", "/c/config.json: not a JSON object: every setting is the default"),
        ("{", "/c/config.json: not a JSON object: every setting is the default"),
        (
            #"{"colours": "light"}"#,
            "/c/config.json: colours: unknown setting (the settings are keys, colors, hyperlinks, letterKeys, confirmQuit, order, copyCommand)"
        ),
        (#"{"colors": "solarized"}"#, #"/c/config.json: colors: must be "default" or "light""#),
        (#"{"hyperlinks": 1}"#, #"/c/config.json: hyperlinks: must be true, false or "auto""#),
        (#"{"hyperlinks": "yes"}"#, #"/c/config.json: hyperlinks: must be true, false or "auto""#),
        (#"{"keys": ["x"]}"#, "/c/config.json: keys: must be an object of actions, each with a list of keys"),
        (#"{"keys": {"quitt": "x"}}"#, "/c/config.json: keys.quitt: no such action (the actions are in the manual's key table)"),
        (#"{"keys": {"quit": 3}}"#, "/c/config.json: keys.quit: must be a key name or a list of them ([] unbinds)"),
        (
            #"{"keys": {"quit": ["Ctrl-?"]}}"#,
            "/c/config.json: keys.quit: “Ctrl-?” is not a key name (a character, or Up, Down, PgUp, Enter, Esc, Ctrl-X…)"
        ),
        (#"{"keys": {"down": "J", "up": "J"}}"#, "/c/config.json: keys.up: “J” is bound to down already"),
        (
            #"{"copyCommand": "wl-copy\nrm -rf ~"}"#,
            #"/c/config.json: copyCommand: must be a command line ("wl-copy", "xclip -selection clipboard"), one line"#
        ),
        (
            #"{"copyCommand": ["xclip"]}"#,
            #"/c/config.json: copyCommand: must be a command line ("wl-copy", "xclip -selection clipboard"), one line"#
        ),
    ])
    func eachBadEntryIsRefusedWithItsReason(json: String, problem: String) {
        let config = Self.parse(json)
        #expect(config.problems == [problem])
    }

    @Test func aCopyCommandIsKept() {
        #expect(Self.parse(#"{"copyCommand": " xclip -selection clipboard "}"#).copyCommand == "xclip -selection clipboard")
        #expect(Self.parse("{}").copyCommand == nil)
    }

    @Test func aBadEntryLeavesTheOthersAndItsDefault() {
        let config = Self.parse(#"{"keys": {"quit": "x", "up": "Ctrl-?"}, "colors": "light"}"#)
        #expect(config.problems.count == 1)
        #expect(config.colors == .light)
        #expect(config.keyMap.command(for: .character("x"), on: .categories) == .quit)
        #expect(config.keyMap.command(for: .character("k"), on: .categories) == .up, "up keeps its keys")
    }

    @Test func theProblemsAreShownOnScreenAtStart() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("bn-config-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let paths = Paths(
            configDirectory: home.appendingPathComponent("config"), dataDirectory: home.appendingPathComponent("data"))
        try FileManager.default.createDirectory(at: paths.configDirectory, withIntermediateDirectories: true)
        try Data(#"{"keys": {"quit": "x", "up": 5}}"#.utf8).write(to: paths.configFile)
        let config = UserConfig.load(from: paths.configFile)
        let app = TerminalApp(
            profile: try NewsProfile(paths: paths, catalog: NewsCatalog.load()),
            hubOptions: HubOptions())
        let state = app.initialState(rows: 30, columns: 100, entries: [], config: config)
        let text = rendered(state).text
        #expect(text.contains("config.json: entries refused, their defaults kept"))
        // The box wraps the file's path (as long as the temporary folder's) at spaces: the entry
        // is on the screen, the whole line in the box's message.
        #expect(text.contains("keys.up:"), "\(text)")
        #expect(
            state.dialog?.message.contains("config.json: keys.up: must be a key") == true, "\(String(describing: state.dialog))")
        #expect(state.keyMap.command(for: .character("x"), on: .categories) == .quit)
    }

    /// Every command of the key map has a name in config.json, and the manual lists them all.
    @Test func everyActionHasANameTheManualGives() throws {
        for binding in KeyMap.bindings {
            #expect(KeyActions.name(of: binding.command) != nil, "\(binding.summary)")
        }
        let manual = try Manual.text()
        let section = try #require(manual.components(separatedBy: "### Your keys and colours").dropFirst().first)
        for (name, _) in KeyActions.names { #expect(section.contains("`\(name)`"), "\(name)") }
    }

    @Test func keyNamesReadAndWrite() {
        for (name, key) in [
            ("x", Key.character("x")), ("|", .character("|")), ("Space", .character(" ")), ("pgdn", .pageDown),
            ("S-Tab", .backTab), ("Ctrl-A", .control("a")), ("alt-f", .alt("f")),
        ] {
            #expect(KeyName.parse(name) == key, "\(name)")
        }
        for bad in ["", "xy", " ", "Ctrl-", "Ctrl-1", "Ctrl-C", "Ctrl-i", "Ctrl-Z", "Alt-x", "\u{7F}", "\u{1B}", "F13"] {
            #expect(KeyName.parse(bad) == nil, "\(bad)")
        }
        #expect([Key.up, .character(" "), .control("q"), .pageUp].map(KeyName.label) == ["↑", "Space", "Ctrl-Q", "PgUp"])
    }

    @Test func hyperlinksDefaultToAutoWhichKnowsTmux() {
        #expect(UserConfig().hyperlinks == .auto)
        #expect(Self.parse(#"{"hyperlinks": true}"#).hyperlinks == .on)
        #expect(Self.parse(#"{"hyperlinks": false}"#).hyperlinks == .off)
        let auto = Hyperlinks.auto
        #expect(auto.enabled(in: ["TERM": "xterm-256color"]))
        #expect(!auto.enabled(in: ["TERM": "linux"]))
        #expect(!auto.enabled(in: ["TERM": "screen-256color", "TMUX": "/tmp/t,1,0"]))
        #expect(!auto.enabled(in: ["TMUX": "/tmp/t,1,0", "TERM_PROGRAM": "tmux", "TERM_PROGRAM_VERSION": "3.3a"]))
        #expect(auto.enabled(in: ["TMUX": "/tmp/t,1,0", "TERM_PROGRAM": "tmux", "TERM_PROGRAM_VERSION": "3.4"]))
        #expect(auto.enabled(in: ["TMUX": "/tmp/t,1,0", "TERM_PROGRAM": "tmux", "TERM_PROGRAM_VERSION": "next-3.6"]))
        #expect(!auto.enabled(in: ["TERM": "screen", "STY": "1.pts"]))
        #expect(Hyperlinks.on.enabled(in: ["TERM": "linux"]) && !Hyperlinks.off.enabled(in: [:]))
    }
}

/// The light colour scheme: the same screen, other colours, none of the default's cyan and
/// yellow (which a light background can hardly show).
struct ColorSchemeTests {
    /// The manual's Categories screen, with the toast of a subscribe and a pending send row,
    /// as colour letters (`ColorScheme.letter`).
    static func screen() -> VirtualTerminal {
        var state = makeState(selection: ["World", "Sports"], rows: 20, columns: 100)
        state.connection = .reconnecting(seconds: 3, reason: "connection refused")
        state.reconnectAt = state.now.addingTimeInterval(3)
        state.hub = "breakingnews @ 127.0.0.1:47999"
        state.registration = RegistrationRecord(
            state: .failed, at: "2026-11-21T17:38:56Z", categories: ["World"], hub: "h", detail: "401 Unauthorized")
        return rendered(state)
    }

    @Test func theLightPresetDrawsWithoutTheDefaultColours() {
        let light = Self.screen().colors(.light)
        let standard = Self.screen().colors(.standard)
        #expect(Self.screen().text == Self.screen().text, "the text is the scheme's to leave alone")
        #expect(standard.joined().contains("c") && standard.joined().contains("y"), "the default uses cyan and yellow")
        #expect(!light.joined().contains("c") && !light.joined().contains("y"), "\(light.joined(separator: "\n"))")
        #expect(light == Self.lightGolden, "drawn:\n\(light.joined(separator: "\n"))")
    }

    /// Header (reconnecting: magenta), switches (blue cursor, green ON), the failed
    /// registration (red), the alerts line and the footer's keys (blue).
    static let lightGolden: [String] = [
        ".....................................mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm", "", "", "", "",
        "bb.ggggggg", "bb", "bb", "bb", "bb", "bb.ggggggg", "", "bb", "", "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
        "mmmmmmmmmmmmmmmmmmmmmmmmm", "", "", "",
        ".bbbbbbbbbbb.........b............bbb..........bbb.....bbb.......b.......b",
    ]
}
