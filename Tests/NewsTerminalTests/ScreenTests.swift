import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

/// Each screen drawn on the virtual terminal, read back as text.
struct ScreenTests {
    /// No line may be wider than the screen, whatever was drawn.
    func expectFits(_ terminal: VirtualTerminal) {
        for (i, line) in terminal.lines.enumerated() {
            #expect(TextWidth.of(line) <= terminal.size.columns, "line \(i) overflows: \(line)")
        }
        #expect(terminal.lines.count == terminal.size.rows)
    }

    @Test func categoriesScreenIsTheTutorialsSwitchScreen() {
        let state = makeState(selection: ["Sports"], items: [entry(1, "Sports", "x"), entry(2, "Sports", "y")])
        let screen = rendered(state)
        let lines = screen.lines
        #expect(lines[0].hasPrefix(" Breaking News"))
        #expect(lines[0].contains("connecting"))
        #expect(lines[1].contains("1 Categories") && lines[1].contains("2 Compose") && lines[1].contains("3 Log (2)"))
        #expect(lines[5] == " ▸ [ OFF ] World")
        #expect(lines[10] == "   [  ON ] Sports         2 unread")
        #expect(lines[12] == "   [ Subscribe ]")
        #expect(screen.text.contains("Not registered yet"))
        #expect(lines[29].contains("Space/Enter toggle") && lines[29].contains("s subscribe") && lines[29].contains("q quit"))
        #expect(screen.style(of: "[  ON ]")?.reverse == true)
        #expect(screen.style(of: "Sports")?.bold == false)
        expectFits(screen)
    }

    @Test func registrationStateIsAlwaysVisible() {
        var state = makeState(selection: ["World"])
        state.registration = RegistrationRecord(state: .registered, at: "2026-11-21T10:00:00Z", categories: ["World"], hub: "h")
        #expect(rendered(state).text.contains("✓ Registered World at"))
        state.registration?.state = .pending
        #expect(rendered(state).text.contains("Pending since"))
        state.switches.insert("Science")
        #expect(rendered(state).text.contains("Unsaved changes"))
        state.connection = .online
        state.hub = "breakingnews @ 127.0.0.1:47474"
        #expect(rendered(state).lines[0].hasSuffix("● online  breakingnews @ 127.0.0.1:47474"))
        state.connection = .reconnecting(seconds: 8, reason: "cut")
        state.reconnectAt = state.now.addingTimeInterval(3.2)
        #expect(rendered(state).lines[0].contains("◌ reconnecting in 4 s"))
    }

    @Test func composeShowsTheFieldBoxesAndResults() {
        var state = makeState()
        _ = state.press(.character("2"))
        _ = state.type("世界 news 🎉")
        state.compose.results = [
            SendResultRow(category: "World", succeeded: true, detail: "abc-1"),
            SendResultRow(category: "Sports", succeeded: false, detail: "the hub answered 403: Send claim is required"),
        ]
        let terminal = rendered(state)
        let lines = terminal.lines
        #expect(lines[6] == "  ▏世界 news 🎉")
        // The cursor sits after the text: 3 + 4 (two wide) + 6 + 2 (emoji) cells.
        #expect(terminal.cursor.visible)
        #expect(terminal.cursor.column == 3 + TextWidth.of("世界 news 🎉"))
        #expect(terminal.cursor.column == 15)
        #expect(lines[7...10].allSatisfy { $0 == "  ▏" }, "five rows of field at 100×30")
        #expect(lines[11] == "   Level: normal   Expires: never   Story: none")
        #expect(lines[12] == "   16/1024 bytes · no category checked")
        #expect(lines[15].contains("[ ] World") && lines[15].contains("[ ] Sports"), "nothing preselected")
        #expect(lines[17] == "   [ Send Notification ]   ↓ to the results, Enter explains one")
        #expect(lines[19].hasPrefix("  World       ✓ sent  abc-1"))
        #expect(lines[20].hasPrefix("  Sports      ✗ failed  the hub answered 403"))
        expectFits(terminal)
    }

    @Test func aLongMessageScrollsInTheField() {
        var state = makeState(rows: 20, columns: 50)
        _ = state.press(.character("2"))
        _ = state.type(String(repeating: "長い", count: 40))
        let terminal = rendered(state)
        #expect(terminal.cursor.column <= 49)
        expectFits(terminal)
    }

    @Test func logIsNewestFirstWithUnreadMarks() {
        var state = makeState(
            items: [
                entry(1, "World", "Breaking World News : first"), entry(2, "Sports", "Breaking Sports News : ⚽ 決勝"),
                entry(3, "World", "Breaking World News : third"),
            ],
            read: ["World": 1])
        _ = state.press(.character("3"), .down)
        let terminal = rendered(state)
        let lines = terminal.lines
        #expect(lines[3].contains("all categories · 3 messages"))
        #expect(lines[5].hasPrefix("   ") && lines[5].hasSuffix("World       third"), "read: the cursor was on it")
        #expect(lines[6].hasPrefix("   ") && lines[6].hasSuffix("Sports      ⚽ 決勝"))
        #expect(lines[7].hasPrefix("   ") && lines[7].hasSuffix("World       first"))
        _ = state.press(.character("u"))
        #expect(rendered(state).lines[6].hasPrefix(" ● "), "marked unread again")
        #expect(terminal.style(of: "⚽ 決勝")?.reverse == true, "the cursor row")
        #expect(lines[29].hasPrefix(" / search") && lines[29].contains("l/c limit"), "\(lines[29])")
        expectFits(terminal)
    }

    /// A screen's content never reaches the footer's row (issue 12, finding 7: at 50×14 the
    /// compose screen's last lines and a long registration line showed through the footer).
    @Test func contentStopsAboveTheFooter() {
        var state = makeState(selection: ["World"], rows: 14, columns: 50)
        state.registration = RegistrationRecord(
            state: .failed, at: "2026-11-21T10:00:00Z", categories: ["World"], hub: "h",
            detail: String(repeating: "a very long reason ", count: 10))
        for screen in ["1", "2"] {
            _ = state.press(.character(Character(screen)))
            let terminal = rendered(state)
            let footer = terminal.lines[13]
            let hints = state.screen == .compose ? "Enter send  Alt-Enter new line" : "Space/Enter toggle  s subscribe"
            #expect(footer.hasPrefix(" " + hints), "screen \(screen): \(footer)")
            #expect(terminal.lines[12].allSatisfy { $0 == "─" }, "screen \(screen): the rule is whole")
        }
    }

    @Test func controlCharactersAndHugeTextsStayInTheirPlace() {
        let nasty = "line1\nline2\tTAB\u{1B}[31mred\u{7}" + String(repeating: "👩‍👩‍👧 日本 ", count: 60)
        var state = makeState(items: [entry(1, "World", nasty)], rows: 16, columns: 60)
        _ = state.reduce(.inbox(.received([entry(2, "Politics", nasty)])))
        for _ in 0..<3 {
            _ = state.press(.tab)
            let terminal = rendered(state)
            expectFits(terminal)
            #expect(!terminal.text.contains("\u{1B}"))
        }
        #expect(state.screen == .categories)
        _ = state.press(.character("3"), .enter)
        let dialog = rendered(state)
        #expect(dialog.text.contains("┌ Notification"))
        expectFits(dialog)
    }

    @Test func tooSmallSaysSoAndResizingLeavesNoGarbage() {
        var state = makeState()
        let big = rendered(state).text
        let terminal = VirtualTerminal(rows: 30, columns: 100)
        Layout.render(state, on: terminal)
        for (rows, columns) in [(12, 40), (5, 20), (1, 1)] {
            terminal.resize(rows: rows, columns: columns)
            _ = state.reduce(.resized(rows: rows, columns: columns))
            Layout.render(state, on: terminal)
            #expect(terminal.text.contains("small") || rows * columns < 40, "\(columns)×\(rows): \(terminal.text)")
            #expect(!terminal.text.contains("Breaking News"))
            expectFits(terminal)
        }
        terminal.resize(rows: 30, columns: 100)
        _ = state.reduce(.resized(rows: 30, columns: 100))
        Layout.render(state, on: terminal)
        #expect(terminal.text == big)
    }

    @Test func helpIsGeneratedFromTheKeyMap() {
        var state = makeState()
        _ = state.press(.character("?"))
        // Longer than the screen: what scrolling shows, page by page.
        var text = rendered(state).text
        for _ in 0..<10 {
            _ = state.press(.pageDown)
            text += rendered(state).text
        }
        for binding in KeyMap.bindings where !binding.keys.isEmpty {
            #expect(text.contains(binding.summary.prefix(20)), "help lacks \(binding.summary)")
        }
        #expect(text.contains("Ctrl-U"))
    }

    /// A toast takes the footer's row, never the title or the content.
    @Test func toastShowsInTheFooterRow() {
        var state = makeState()
        let before = rendered(state).lines
        _ = state.reduce(.inbox(.received([entry(1, "World", "Breaking World News : hello")])))
        let lines = rendered(state).lines
        #expect(lines[29] == " ▶ Notification: Breaking World News : hello")
        #expect(lines[0] == before[0] && lines[3] == before[3], "the title and the screen's heading stay")
    }

    @Test func textWidthsAreThoseOfTheTerminal() {
        #expect(TextWidth.of("abc") == 3)
        #expect(TextWidth.of("日本語") == 6)
        #expect(TextWidth.of("🎉") == 2)
        #expect(TextWidth.of("👩‍👩‍👧") == 2)
        #expect(TextWidth.of("e\u{301}") == 1)
        #expect(TextWidth.truncate("日本語テキスト", to: 7) == "日本語…")
        #expect(TextWidth.pad("日本", to: 6) == "日本  ")
    }
}

/// One geometry for drawing and paging: a page of the log is exactly the rows the log
/// screen draws messages on.
@Suite struct ScreenGeometryTests {
    @Test(arguments: [(30, 100), (14, 50), (24, 80), (60, 200)])
    func aLogPageIsTheRowsTheLogDraws(rows: Int, columns: Int) {
        let geometry = ScreenGeometry(rows: rows, columns: columns)
        #expect(geometry.logPageSize == rows - 8)
        #expect(ScreenGeometry.listTop + geometry.logPageSize == geometry.positionRow)
        #expect(geometry.positionRow < geometry.footerRule && geometry.footerRule < geometry.footerRow)
        // Drawn: with more messages than fit, the rows between the list's top and the
        // position line hold messages, and the position line says which.
        var state = AppState(
            categories: ["World"], selection: [], registration: nil,
            items: (1...100).map { entry($0, "World", "Breaking World News : \($0)") }, readMarks: ReadMarks([1...100]),
            rows: rows, columns: columns)
        _ = state.reduce(.key(.character("3")))
        let terminal = VirtualTerminal(rows: rows, columns: columns)
        Layout.render(state, on: terminal)
        let screen = terminal.lines
        #expect(screen[geometry.positionRow].contains("1/100"))
        let lastRow = screen[ScreenGeometry.listTop + geometry.logPageSize - 1]
        #expect(lastRow.contains("World") && lastRow.hasSuffix(" \(100 - geometry.logPageSize + 1)"), "\(lastRow)")
    }
}
