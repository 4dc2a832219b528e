import BreakingNewsKit
import Foundation

/// The message field's keys: editing over several lines, the history of sends (↑ on the first
/// row, Ctrl-P and Ctrl-N), and Ctrl-X Ctrl-E for the user's editor.
extension AppState {
    /// Keys the text field takes; nil for keys it passes on.
    mutating func handleTextField(_ key: Key) -> [Effect]? {
        // Edited in place: a key costs the edit, not a copy of the whole draft.
        compose.cursor = min(compose.cursor, compose.text.count)
        if compose.controlX {
            compose.controlX = false
            guard key == .control("e") else {
                note("Ctrl-X \(KeyName.label(key)) does nothing: Ctrl-X Ctrl-E writes the message in your editor")
                return []
            }
            return [.editMessage(String(compose.text))]
        }
        let keepsColumn = key == .up || key == .down
        defer {
            if !keepsColumn { compose.goalColumn = nil }
            compose.fieldTop = composeField.top(from: compose.fieldTop, height: geometry.composeFieldRows)
        }
        switch key {
        case .up, .control("p"):
            let field = composeField
            guard key == .up, field.cursorRow > 0 else { return recall(older: true) }
            moveRow(by: -1, field)
            return []
        case .down:
            let field = composeField
            guard field.cursorRow < field.rows.count - 1 else {
                // Only from its last row does ↓ leave the field.
                compose.focus = .category(0)
                return []
            }
            moveRow(by: 1, field)
            return []
        case .control("n"):
            return recall(older: false)
        case .control("x"):
            compose.controlX = true
            note("Ctrl-X… (Ctrl-E: write the message in your editor)")
            return []
        case .enter:
            return send()
        case .escape:
            compose.focus = .category(0)
            return []
        default:
            guard edit(key) else { return nil }
        }
        // Edited: the field holds the user's own text now, whatever it was recalled from.
        compose.recalled = nil
        compose.error = nil
        return []
    }

    /// The editing keys; false for a key that is none of them.
    private mutating func edit(_ key: Key) -> Bool {
        switch key {
        case .character(let c): insert(c)
        // Alt-Enter: a new line (Enter sends).
        case .alt("\n"): insertText("\n")
        case .paste(let pasted): insertText(pasted)
        case .left: compose.cursor = max(0, compose.cursor - 1)
        case .right: compose.cursor = min(compose.text.count, compose.cursor + 1)
        case .home, .control("a"): compose.cursor = composeField.cursorRowBounds.start
        case .end, .control("e"): compose.cursor = composeField.cursorRowBounds.end
        case .alt("b"): compose.cursor = wordStart(before: compose.cursor)
        case .alt("f"): compose.cursor = wordEnd(after: compose.cursor)
        case .backspace:
            guard compose.cursor > 0 else { return true }
            compose.text.remove(at: compose.cursor - 1)
            compose.cursor -= 1
        case .delete, .control("d"):
            guard compose.cursor < compose.text.count else { return true }
            compose.text.remove(at: compose.cursor)
        case .control("w"):
            let start = wordStart(before: compose.cursor)
            compose.text.removeSubrange(start..<compose.cursor)
            compose.cursor = start
        case .alt("d"):
            compose.text.removeSubrange(compose.cursor..<wordEnd(after: compose.cursor))
        case .control("u"):
            // To the start of the line; at its start, the line feed before it (the lines join).
            let start = lineStart(compose.cursor)
            let from = start == compose.cursor ? max(0, start - 1) : start
            compose.text.removeSubrange(from..<compose.cursor)
            compose.cursor = from
        case .control("k"):
            // To the end of the line; at its end, the line feed (the next line joins).
            let end = lineEnd(compose.cursor)
            let to = end == compose.cursor ? min(compose.text.count, end + 1) : end
            compose.text.removeSubrange(compose.cursor..<to)
        default:
            return false
        }
        return true
    }

    /// ↑ or ↓ inside the field: the row above or below, at the column the move started from.
    private mutating func moveRow(by delta: Int, _ field: ComposeField) {
        let column = compose.goalColumn ?? field.cursorColumn
        compose.goalColumn = column
        compose.cursor = field.position(inRow: field.cursorRow + delta, column: column, of: compose.text)
    }

    /// Puts an earlier send (`older`) or a later one in the field; past the newest, the draft
    /// the first recall took out of it.
    private mutating func recall(older: Bool) -> [Effect] {
        let sent = compose.sent
        guard !sent.isEmpty else {
            if older { note("Nothing sent from this home yet: ↑ recalls the last \(SentHistory.limit) sends") }
            return []
        }
        let next: Int?
        switch (compose.recalled, older) {
        case (nil, true): next = 0
        case (nil, false): return []
        case (let shown?, true):
            guard shown < sent.count - 1 else {
                note("The oldest send kept (the last \(SentHistory.limit) are)")
                return []
            }
            next = shown + 1
        case (let shown?, false): next = shown == 0 ? nil : shown - 1
        }
        if compose.recalled == nil { compose.stashed = compose.text }
        let text = next.map { Array(sent[sent.count - 1 - $0].text) } ?? compose.stashed
        replaceMessage(with: text)
        compose.recalled = next
        if next == nil { compose.stashed = [] }
        return []
    }

    /// The field's text replaced whole (a recall, the editor), the cursor at its end.
    mutating func replaceMessage(with text: [Character]) {
        compose.text = text
        compose.cursor = text.count
        compose.goalColumn = nil
        compose.error = nil
        compose.fieldTop = composeField.top(from: 0, height: geometry.composeFieldRows)
    }

    private mutating func insertText(_ text: String) {
        let characters = Array(text)
        compose.text.insert(contentsOf: characters, at: compose.cursor)
        compose.cursor += characters.count
    }

    /// Inserts one typed character at the cursor. A terminal hands over a character the user
    /// sees as one (🗳️, 🇫🇷, 👩‍👩‍👧, e + ◌́) as several code points: one that joins the character
    /// before the cursor becomes part of it, so the cursor, Backspace and Delete move over what
    /// the user sees.
    private mutating func insert(_ c: Character) {
        let cursor = compose.cursor
        if cursor > 0, compose.text[cursor - 1] != "\n" {
            let joined = String(compose.text[cursor - 1]) + String(c)
            if joined.count == 1 {
                compose.text[cursor - 1] = Character(joined)
                return
            }
        }
        compose.text.insert(c, at: cursor)
        compose.cursor += 1
    }

    /// Where the line (between line feeds) holding `position` starts, and ends.
    private func lineStart(_ position: Int) -> Int {
        var start = position
        while start > 0, compose.text[start - 1] != "\n" { start -= 1 }
        return start
    }

    private func lineEnd(_ position: Int) -> Int {
        var end = position
        while end < compose.text.count, compose.text[end] != "\n" { end += 1 }
        return end
    }

    /// Where the word before `position` starts (spaces before it skipped), as Ctrl-W and
    /// Alt-B see words: runs of characters that are not white space.
    private func wordStart(before position: Int) -> Int {
        var start = position
        while start > 0, compose.text[start - 1].isWhitespace { start -= 1 }
        while start > 0, !compose.text[start - 1].isWhitespace { start -= 1 }
        return start
    }

    /// Where the word after `position` ends (spaces before it skipped), for Alt-F and Alt-D.
    private func wordEnd(after position: Int) -> Int {
        var end = position
        while end < compose.text.count, compose.text[end].isWhitespace { end += 1 }
        while end < compose.text.count, !compose.text[end].isWhitespace { end += 1 }
        return end
    }
}
