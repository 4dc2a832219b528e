import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

/// Any terminal (issue 12, finding 7): the footer keeps whole hints at every width, and a
/// dialog or the help longer than the screen scrolls instead of being cut off.
struct SmallScreenTests {
    /// Every footer hint shown is whole ("key summary"), none overlaps the next, and when
    /// some had to go the line ends with "…  ? help".
    @Test(arguments: [ScreenID.categories, .compose, .log])
    func theFooterKeepsWholeHintsAtEveryWidth(screen: ScreenID) {
        // The screen as it opens (Compose: on its category row, where the footer is its own).
        var state = makeState(rows: 14, columns: 50)
        _ = state.press(.character(Character(String(screen.rawValue + 1))))
        if screen == .compose { _ = state.press(.escape) }
        let bindings = Layout.footerHints(state).map { (label: $0.0, summary: $0.1) }
        let hints = bindings.map { "\($0.label) \($0.summary)" }
        let all = " " + hints.joined(separator: "  ")
        for columns in 8...140 {
            let terminal = VirtualTerminal(rows: 1, columns: columns)
            Layout.drawHints(bindings.map { ($0.label, $0.summary) }, row: 0, Canvas(terminal))
            let line = terminal.lines[0]
            #expect(TextWidth.of(line) <= columns)
            if TextWidth.of(all) <= columns {
                #expect(line == all, "\(columns) columns")
                continue
            }
            // Cut: whole hints from the start, then the ellipsis and the help key if it fits.
            let parts = line.dropFirst().components(separatedBy: "  ")
            for part in parts where part != "…" && part != "? help" && !part.isEmpty {
                #expect(hints.contains(part), "\(columns) columns: '\(part)' is not a whole hint in '\(line)'")
            }
            if columns >= 12 { #expect(line.hasSuffix("…  ? help"), "\(columns) columns: \(line)") }
        }
        // Drawn on the smallest screen, the footer row is the same line.
        let terminal = VirtualTerminal(rows: 1, columns: 50)
        Layout.drawHints(bindings.map { ($0.label, $0.summary) }, row: 0, Canvas(terminal))
        #expect(rendered(state).lines[13] == terminal.lines[0])
    }

    @Test func aLongDialogScrollsAndSaysWhereItIs() {
        var state = makeState(
            items: [entry(1, "World", (1...40).map { "line\($0)" }.joined(separator: "\n"))], rows: 14, columns: 50)
        _ = state.press(.character("3"), .enter)
        var text = rendered(state).text
        #expect(text.contains("Notification · 1–8 of 46 ↑↓"))
        // The message view: when, which category, which notification, then the text.
        #expect(text.contains("Category  World") && text.contains("Id        n1"))
        #expect(text.contains("line1 ") && !text.contains("line5 "))
        let boxRow = { (text: String) in text.split(separator: "\n").first { $0.contains("└") }.map(String.init) ?? "" }
        let bottom = boxRow(text)
        _ = state.press(.character("G"))
        text = rendered(state).text
        #expect(text.contains("39–46 of 46"))
        #expect(boxRow(text) == bottom, "the box keeps its width while it scrolls")
        #expect(text.contains("[ OK ]  Enter"))
        _ = state.press(.up, .up)
        #expect(rendered(state).text.contains("37–44 of 46"))
        _ = state.press(.character("g"))
        #expect(rendered(state).text.contains("1–8 of 46"))
        _ = state.press(.pageDown)
        #expect(rendered(state).text.contains("9–16 of 46"))
        _ = state.press(.enter)
        #expect(state.dialog == nil)
        #expect(state.overlayTop == 0, "the next box opens at its top")
    }

    @Test func theHelpScrollsToItsLastKeyOnTheSmallestScreen() {
        var state = makeState(rows: 14, columns: 50)
        _ = state.press(.character("?"))
        var text = rendered(state).text
        #expect(text.contains("Keys · 1–8 of"))
        #expect(text.contains("↑↓ PgUp PgDn scroll"))
        _ = state.press(.end)
        text = rendered(state).text
        #expect(text.contains("leave the field"), "\(text)")
        #expect(state.showHelp, "scrolling keeps the help open")
        _ = state.press(.character("x"))
        #expect(!state.showHelp)
    }

    @Test func glyphsHaveASCIIStandInsOfTheSameWidth() {
        let text = "─│┌┐└┘●◌○▸▶✓✗⏎▏↑↓←→…·—“” abc ⚽ 決勝 e\u{301}"
        let ascii = ASCIIFallback.ascii(text)
        #expect(ascii.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F }, "\(ascii)")
        #expect(TextWidth.of(ascii) == TextWidth.of(text))
        #expect(ascii.hasPrefix("-|++++*oo>>vx~|^v<>~.-\"\" abc "))
    }

    @Test func unusableTerminalTypesAreNamed() {
        #expect(TerminalType.problem(environment: [:])?.hasPrefix("TERM is not set") == true)
        #expect(TerminalType.problem(environment: ["TERM": ""])?.hasPrefix("TERM is not set") == true)
        #expect(TerminalType.problem(environment: ["TERM": "dumb"])?.contains("cannot move the cursor") == true)
        #expect(TerminalType.problem(environment: ["TERM": "no-such-terminal"])?.contains("not known here") == true)
        #expect(TerminalType.problem(environment: ["TERM": "../../etc/passwd"])?.contains("not a terminal type name") == true)
        #expect(TerminalType.problem(environment: ["TERM": "\u{1B}]52;c;x\u{7}"])?.contains("\u{1B}") == false)
        #expect(TerminalType.problem(environment: ["TERM": "xterm-256color"]) == nil)
        #expect(TerminalType.problem(environment: ["TERM": "screen"]) == nil)
    }

    /// On the smallest screen the buttons stay in sight: Subscribe with the registration line
    /// under it, and Send with a result under it.
    @Test func theSmallestScreenKeepsItsButtons() {
        var state = makeState(rows: 14, columns: 50)
        state.connection = .reconnecting(seconds: 1, reason: "no local hub is running")
        var lines = rendered(state).lines
        #expect(lines.contains { $0.contains("[ Subscribe ]") }, "\(lines.joined(separator: "\n"))")
        #expect(lines.contains { $0.contains("Not registered yet") })
        _ = state.press(.character("G"), .down)
        #expect(CategoriesScreen.categoryRow(forScreenRow: lines.firstIndex { $0.contains("[ Subscribe ]") }!, state) == 6)
        state = makeState(rows: 14, columns: 50)
        _ = state.press(.character("2"))
        _ = state.type("hello")
        _ = state.reduce(.sent([SendResultRow(category: "World", succeeded: true, detail: "id")]))
        lines = rendered(state).lines
        let send = lines.firstIndex { $0.contains("[ Send Notification ]") }
        #expect(send != nil, "\(lines.joined(separator: "\n"))")
        #expect(lines.contains { $0.contains("World") && $0.contains("sent") })
    }

    /// Why the hub cannot be reached is said whole on the Categories screen.
    @Test func theReasonTheHubIsAwayIsSaidWhole() {
        var state = makeState()
        state.connection = .offline(
            .unavailable("port 41234 is held by the local hub of another data folder (pid 7); set BREAKING_NEWS_HUB_PORT"))
        let text = rendered(state).text
        #expect(text.contains("Hub: port 41234 is held by the local hub of another data folder (pid 7); set"))
        #expect(text.contains("BREAKING_NEWS_HUB_PORT"))
    }
}
