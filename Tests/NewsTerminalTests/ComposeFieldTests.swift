import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

/// The message field over several lines (issue 50): its rows, its keys, the history of sends,
/// the editor's effect, and the counter counting what is sent.
struct ComposeFieldTests {
    static func composing(_ text: String = "", sent: [SentMessage] = [], rows: Int = 30, columns: Int = 100) -> AppState {
        var state = AppState(
            categories: names.map { BreakingNewsKit.Category($0) }, selection: [], registration: nil, items: [], rows: rows,
            columns: columns, now: Date(timeIntervalSince1970: 1_000), draft: text, sent: sent)
        _ = state.press(.character("2"))
        return state
    }

    /// Every character is on exactly one row, in order; no row is wider than the field; a line
    /// feed always ends a row; the cursor's row holds the cursor. Over random texts of words,
    /// wide characters, line feeds and runs of spaces.
    @Test(arguments: 0..<200)
    func rowsCoverTheTextInOrderAndFit(seed: Int) {
        var generator = SplitMix(seed: UInt64(seed))
        let pieces = ["news", " ", "  ", "\n", "決勝", "🗳️", "a-very-long-word-without-any-break-at-all", "é", "\t"]
        var text: [Character] = []
        for _ in 0..<Int(generator.next() % 60) { text += Array(pieces[Int(generator.next() % UInt64(pieces.count))]) }
        let width = 5 + Int(generator.next() % 30)
        let cursor = text.isEmpty ? 0 : Int(generator.next() % UInt64(text.count + 1))
        let field = ComposeField(text: text, cursor: cursor, width: width)
        var next = 0
        for row in field.rows {
            #expect(row.start == next, "rows are contiguous")
            let cells = text[row.start..<row.end].reduce(0) { $0 + ComposeField.shown($1).cells }
            let trailingSpace = row.end > row.start && text[row.end - 1] == " " ? 1 : 0
            #expect(cells - trailingSpace <= width || row.end - row.start == 1, "a row fits: \(cells) cells in \(width)")
            next = row.end
            if next < text.count, text[next] == "\n" {
                #expect(!row.wraps)
                next += 1
            }
        }
        #expect(next == text.count)
        let bounds = field.cursorRowBounds
        #expect(bounds.start <= cursor && (cursor <= bounds.end || field.rows[field.cursorRow].wraps))
        #expect(field.cursorColumn <= width)
    }

    @Test func aLongLineWrapsBetweenWords() {
        let field = ComposeField(text: Array("Polls close at ten tonight"), cursor: 0, width: 10)
        let text = Array("Polls close at ten tonight")
        #expect(field.rows.map { field.text(of: $0, in: text) } == ["Polls ", "close at ", "ten ", "tonight"])
    }

    /// Alt-Enter adds a line, Enter sends all of them; ↑ and ↓ move by rows keeping the column;
    /// ↓ leaves the field only from its last row.
    @Test func altEnterAddsLinesAndTheArrowsMoveBetweenThem() {
        var state = Self.composing()
        state.compose.checked[0] = true
        _ = state.type("First line")
        _ = state.press(.alt("\n"))
        _ = state.type("Second")
        _ = state.press(.alt("\n"))
        _ = state.type("Third line here")
        #expect(String(state.compose.text) == "First line\nSecond\nThird line here")
        _ = state.press(.up)
        #expect(state.compose.cursor == "First line\nSecond".count, "the column as far as the row goes")
        _ = state.press(.up)
        #expect(state.compose.cursor == "First line".count, "the column kept from where the move started")
        _ = state.press(.home)
        #expect(state.compose.cursor == 0)
        _ = state.press(.down, .down)
        #expect(state.compose.focus == .text)
        _ = state.press(.down)
        #expect(state.compose.focus == .category(0), "↓ on the last row leaves the field")
        _ = state.press(.up)
        #expect(state.press(.enter) == [.send(text: "First line\nSecond\nThird line here", categories: ["World"])])
    }

    @Test func theFieldScrollsToTheCursorAndMarksHiddenRows() {
        var state = Self.composing((1...12).map { "line \($0)" }.joined(separator: "\n"))
        var lines = rendered(state).lines
        #expect(lines[6] == "  ▲line 8", "the cursor's row in sight, the rows above marked")
        #expect(lines[10] == "  ▏line 12")
        #expect(lines[5].contains("line 12 of 12"))
        for _ in 0..<11 { _ = state.press(.up) }
        lines = rendered(state).lines
        #expect(lines[6] == "  ▏line 1")
        #expect(lines[10] == "  ▼line 5", "rows below marked")
        #expect(rendered(state).cursor.row == 6)
    }

    /// ↑ on the first row and Ctrl-P go back through the sends, Ctrl-N forward and then to
    /// the draft typed before; an edit makes the text the user's own.
    @Test func historyRecallsTheLastSendsAndGivesTheDraftBack() {
        let sent = ["one", "two", "three"].map { SentMessage(text: $0, categories: ["World"], sentAt: Date()) }
        var state = Self.composing("draft", sent: sent)
        _ = state.press(.up)
        #expect(String(state.compose.text) == "three")
        _ = state.press(.control("p"), .control("p"))
        #expect(String(state.compose.text) == "one")
        _ = state.press(.up)
        #expect(String(state.compose.text) == "one", "the oldest kept")
        #expect(state.toast?.text.contains("oldest") == true)
        _ = state.press(.control("n"))
        #expect(String(state.compose.text) == "two")
        _ = state.press(.control("n"), .control("n"))
        #expect(String(state.compose.text) == "draft", "past the newest: the draft again")
        _ = state.press(.control("p"))
        _ = state.type("!")
        _ = state.press(.control("n"))
        #expect(String(state.compose.text) == "three!", "edited, it is a draft of its own")
    }

    @Test func aWindowOpensWithTheLastSendsCategoriesChecked() {
        let sent = [SentMessage(text: "a", categories: ["Sports", "science"], sentAt: Date())]
        let state = Self.composing(sent: sent)
        #expect(state.compose.checked == names.map { $0 == "Sports" || $0 == "Science" })
        #expect(Self.composing().compose.checked.allSatisfy { !$0 }, "before a first send none is checked")
    }

    /// A send that reached one category at least is remembered, in the window and the home.
    @Test func aSendIsRemembered() {
        var state = Self.composing("Quake hits coast")
        state.compose.checked[0] = true
        #expect(state.press(.enter) == [.send(text: "Quake hits coast", categories: ["World"])])
        let effects = state.reduce(.sent([SendResultRow(category: "World", succeeded: true, detail: "id")]))
        guard case .remember(let sent)? = effects.first else {
            Issue.record("no remember: \(effects)")
            return
        }
        #expect(sent.text == "Quake hits coast" && sent.categories == ["World"])
        #expect(state.compose.sent == [sent])
        _ = state.press(.up)
        #expect(String(state.compose.text) == "Quake hits coast")
        var failed = Self.composing("x")
        failed.compose.checked[0] = true
        _ = failed.press(.enter)
        #expect(failed.reduce(.sent([SendResultRow(category: "World", succeeded: false, detail: "403")])) == [])
    }

    /// The counter counts what is sent: white space at the ends is not, and the refusal of
    /// 1,025 bytes says the number the counter showed.
    @Test func theCounterAndTheRefusalCountTheSameBytes() {
        var state = Self.composing(String(repeating: "a", count: 1024) + "  \n ")
        state.compose.checked[0] = true
        #expect(rendered(state).text.contains("1024/1024 bytes"))
        #expect(state.press(.enter) == [.send(text: String(repeating: "a", count: 1024), categories: ["World"])])
        state = Self.composing("é" + String(repeating: "a", count: 1023) + " ")
        state.compose.checked[0] = true
        #expect(rendered(state).text.contains("1025/1024 bytes"))
        #expect(state.press(.enter) == [])
        #expect(state.compose.error == "Cannot send: the message is 1025 bytes; at most 1024 are allowed.")
    }

    @Test func controlXControlEAsksForTheEditorAndItsTextComesBack() {
        var state = Self.composing("draft")
        #expect(state.press(.control("x")) == [])
        #expect(state.press(.control("e")) == [.editMessage("draft")])
        _ = state.reduce(.edited("From the editor\nsecond line"))
        #expect(String(state.compose.text) == "From the editor\nsecond line")
        #expect(state.compose.cursor == state.compose.text.count)
        #expect(state.toast?.text.contains("as your editor saved it") == true)
        _ = state.press(.control("x"))
        #expect(state.press(.character("q")) == [], "Ctrl-X then another key does nothing, q included")
        #expect(!state.quitting && String(state.compose.text) == "From the editor\nsecond line")
        #expect(state.toast?.text.contains("Ctrl-X Ctrl-E") == true)
    }

    @Test func checkingABoxClearsTheNoCategoryError() {
        var state = Self.composing("news")
        _ = state.press(.enter)
        #expect(state.compose.error?.contains("check at least one category") == true)
        _ = state.press(.escape, .character(" "))
        #expect(state.compose.error == nil)
    }

    @Test func controlUAndControlKWorkOnTheLine() {
        var state = Self.composing("one\ntwo three\nfour")
        _ = state.press(.up)
        _ = state.press(.control("k"))
        #expect(String(state.compose.text) == "one\ntwo \nfour")
        _ = state.press(.control("k"))
        #expect(String(state.compose.text) == "one\ntwo four", "at the end of a line, the lines join")
        _ = state.press(.control("u"))
        #expect(String(state.compose.text) == "one\nfour")
    }
}

/// A small deterministic generator for the property tests.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state = state &+ 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
