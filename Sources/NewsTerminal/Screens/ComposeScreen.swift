import BreakingNewsKit
import Foundation

/// Compose and send breaking news per category.
enum ComposeScreen {
    /// Draws the screen; returns where the text cursor goes when the field has focus.
    static func draw(_ state: AppState, _ c: Canvas) -> (row: Int, column: Int)? {
        let compose = state.compose
        // A short screen drops the blank lines and the labels, so Send and its results stay
        // in sight.
        let roomy = !state.geometry.isCompact
        var row = ScreenGeometry.contentTop
        c.text("  Send breaking news", row: row, column: 0, style: Style(bold: true))
        row += roomy ? 2 : 1
        let fieldFocused = compose.focus == .text
        if roomy {
            c.text("  Message", row: row, column: 0, style: Style(bold: fieldFocused))
            row += 1
        }
        let fieldWidth = max(10, c.columns - 6)
        let (visible, cursorColumn) = fieldWindow(compose.text, cursor: compose.cursor, width: fieldWidth)
        c.text("  ▏", row: row, column: 0, style: Style(color: fieldFocused ? .accent : .muted))
        c.text(TextWidth.pad(visible, to: fieldWidth), row: row, column: 3, style: Style(underline: true))
        let cursor = fieldFocused ? (row, 3 + cursorColumn) : nil
        let bytes = String(compose.text).utf8.count
        row += 1
        c.text(
            "   \(bytes)/\(Publisher.maximumTextBytes) bytes", row: row, column: 0,
            style: Style(color: bytes > Publisher.maximumTextBytes ? .bad : .muted))
        row += 1
        if roomy {
            c.text("  Categories", row: row + 1, column: 0)
            row += 2
        }
        var column = 3
        let all = compose.checked.allSatisfy { $0 }
        let boxes = state.categories.enumerated().map { ($0.offset, compose.checked[$0.offset], $0.element.name) }
        for (i, checked, name) in boxes + [(state.categories.count, all, "All")] {
            let box = (checked ? "[x] " : "[ ] ") + name
            let width = TextWidth.of(box)
            if column + width > c.columns - 1 {
                row += 1
                column = 3
            }
            let focused = compose.focus == .category(i)
            c.text(box, row: row, column: column, style: Style(bold: focused, reverse: focused))
            column += width + 3
        }
        row += roomy ? 2 : 1
        let sendFocused = compose.focus == .send
        c.text(
            compose.sending ? "[ Sending… ]" : "[ Send Notification ]", row: row, column: 3,
            style: Style(bold: true, reverse: sendFocused))
        row += 2
        if let error = compose.error {
            c.text("  " + error, row: row, column: 0, style: Style(color: .bad))
            row += 1
        }
        for (i, result) in compose.results.enumerated() where row < state.geometry.footerRule {
            let focused = compose.focus == .result(i)
            c.text("  " + TextWidth.pad(result.category.name, to: 12), row: row, column: 0, style: Style(reverse: focused))
            c.text(
                result.succeeded ? "✓ sent  " : "✗ failed  ", row: row, column: 14,
                style: Style(color: result.succeeded ? .good : .bad))
            let column = result.succeeded ? 22 : 24
            // Cut to leave room for what Enter does on the row: the whole of it is there.
            let action = result.succeeded ? "Enter: explain" : "Enter: details"
            let room = c.columns - column - (focused ? TextWidth.of(action) + 2 : 0)
            let used = c.text(result.detail, row: row, column: column, style: Style(color: .muted), width: max(0, room))
            if focused, result.notificationId != nil || result.problem != nil {
                c.text(action, row: row, column: column + used + 2, style: Style(color: .accent))
            }
            row += 1
        }
        return cursor
    }

    /// The part of the text that fits, scrolled to keep the cursor in view, and the
    /// cursor's column within it.
    static func fieldWindow(_ text: [Character], cursor: Int, width: Int) -> (String, Int) {
        // Only the characters that can be on screen are looked at: at most `width` cells on
        // either side of the cursor (twice that in characters, for any of zero width), so a
        // frame costs the field's width, not the draft's length.
        let from = max(0, cursor - 2 * width)
        let to = min(text.count, cursor + 2 * width)
        let clean: [Character] = text[from..<to].map { $0 == "\n" ? "⏎" : TextWidth.printable(String($0)).first ?? " " }
        let widths = clean.map { TextWidth.of($0) }
        let at = cursor - from
        var start = at
        var before = 0
        while start > 0, before + widths[start - 1] <= width - 1 {
            start -= 1
            before += widths[start]
        }
        var end = start
        var used = 0
        while end < clean.count, used + widths[end] <= width {
            used += widths[end]
            end += 1
        }
        return (String(clean[start..<end]), before)
    }
}

/// The keys of the compose screen and its text field.
extension AppState {
    mutating func composeCommand(_ command: Command) -> [Effect] {
        let count = categories.count
        switch (command, compose.focus) {
        case (.cancel, _):
            compose.focus = .text
        case (.up, .category):
            compose.focus = .text
        case (.up, .send):
            compose.focus = .category(0)
        case (.down, .text):
            compose.focus = .category(0)
        case (.down, .category):
            compose.focus = .send
        case (.left, .category(let i)):
            compose.focus = .category(max(0, i - 1))
        case (.right, .category(let i)):
            // The last box is [All].
            compose.focus = .category(min(count, i + 1))
        case (.toggle, .category(let i)) where i == count:
            compose.checked = Array(repeating: !compose.checked.allSatisfy { $0 }, count: count)
        case (.toggle, .category(let i)):
            compose.checked[i].toggle()
        case (.down, .send) where !compose.results.isEmpty:
            compose.focus = .result(0)
        case (.down, .result(let i)):
            compose.focus = .result(min(compose.results.count - 1, i + 1))
        case (.up, .result(let i)):
            compose.focus = i == 0 ? .send : .result(i - 1)
        case (.toggle, .result(let i)), (.send, .result(let i)):
            guard let result = compose.results[safe: i] else { return [] }
            if let problem = result.problem {
                // A failure, whole, with what to do about it.
                dialog = Dialog(title: "\(result.category.name): not sent", message: problem, isError: true)
                return []
            }
            guard let id = result.notificationId else { return [] }
            return [.explain(notificationId: id, category: result.category.name)]
        case (.toggle, .send), (.send, _):
            return send()
        case (.toggleAll, _):
            let all = !compose.checked.allSatisfy { $0 }
            compose.checked = Array(repeating: all, count: count)
        default:
            break
        }
        return []
    }

    /// On Compose outside the field: a paste, a letter, and any other printable key that is
    /// no key of the screen, go into the message (the field takes them back); nil for the
    /// screen's keys.
    mutating func intoTheField(_ key: Key) -> [Effect]? {
        switch key {
        case .paste:
            compose.focus = .text
            return handleTextField(key)
        case .character(let c) where c.isLetter || (keyMap.command(for: key, on: .compose) == nil && !c.isNewline):
            // Every letter is text on Compose: a word typed on the category row is not
            // commands (h moving, a checking all, q quitting).
            compose.focus = .text
            return handleTextField(key)
        default:
            return nil
        }
    }

    /// Keys the text field takes; nil for keys it passes on.
    mutating func handleTextField(_ key: Key) -> [Effect]? {
        // Edited in place: a key costs the edit, not a copy of the whole draft.
        compose.cursor = min(compose.cursor, compose.text.count)
        switch key {
        case .character(let c): insert(c)
        case .paste(let pasted):
            let characters = Array(pasted)
            compose.text.insert(contentsOf: characters, at: compose.cursor)
            compose.cursor += characters.count
        case .left: compose.cursor = max(0, compose.cursor - 1)
        case .right: compose.cursor = min(compose.text.count, compose.cursor + 1)
        case .home, .control("a"): compose.cursor = 0
        case .end, .control("e"): compose.cursor = compose.text.count
        case .alt("b"): compose.cursor = wordStart(before: compose.cursor)
        case .alt("f"): compose.cursor = wordEnd(after: compose.cursor)
        case .backspace:
            guard compose.cursor > 0 else { return [] }
            compose.text.remove(at: compose.cursor - 1)
            compose.cursor -= 1
        case .delete, .control("d"):
            guard compose.cursor < compose.text.count else { return [] }
            compose.text.remove(at: compose.cursor)
        case .control("w"):
            let start = wordStart(before: compose.cursor)
            compose.text.removeSubrange(start..<compose.cursor)
            compose.cursor = start
        case .alt("d"):
            compose.text.removeSubrange(compose.cursor..<wordEnd(after: compose.cursor))
        case .control("u"):
            compose.text.removeFirst(compose.cursor)
            compose.cursor = 0
        case .control("k"):
            compose.text.removeLast(compose.text.count - compose.cursor)
        case .escape, .down:
            compose.focus = .category(0)
            return []
        case .enter:
            return send()
        default:
            return nil
        }
        compose.error = nil
        return []
    }

    /// Inserts one typed character at the cursor. A terminal hands over a character the user
    /// sees as one (🗳️, 🇫🇷, 👩‍👩‍👧, e + ◌́) as several code points: one that joins the character
    /// before the cursor becomes part of it, so the cursor, Backspace and Delete move over what
    /// the user sees.
    private mutating func insert(_ c: Character) {
        let cursor = compose.cursor
        if cursor > 0 {
            let joined = String(compose.text[cursor - 1]) + String(c)
            if joined.count == 1 {
                compose.text[cursor - 1] = Character(joined)
                return
            }
        }
        compose.text.insert(c, at: cursor)
        compose.cursor += 1
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

    mutating func send() -> [Effect] {
        guard !compose.sending else { return [] }
        let chosen = categories.indices.filter { compose.checked[$0] }.map { categories[$0] }
        let text: String
        do {
            text = try Publisher.validate(String(compose.text))
        } catch {
            // This send's outcome replaces the last one's rows: they are not about it.
            compose.results = []
            compose.error = "Cannot send: \(error.description)."
            compose.focus = .text
            return []
        }
        guard !chosen.isEmpty else {
            compose.results = []
            compose.error = "Cannot send: check at least one category (Esc, then Space on a box)."
            return []
        }
        compose.error = nil
        let effect = Effect.send(text: text, categories: chosen)
        guard chosen.count == 1 else {
            // More than one category: the list is shown and the user says yes once.
            dialog = Dialog(
                title: "Send to \(chosen.count) categories?",
                message: "\(chosen.map(\.name).joined(separator: ", ")): “\(text)”", isError: false, confirm: effect)
            return []
        }
        return confirmed(effect)
    }

    /// Runs what a question's yes stands for.
    mutating func confirmed(_ effect: Effect) -> [Effect] {
        switch effect {
        case .send:
            compose.sending = true
            compose.inFlight = compose.text
            compose.results = []
        case .quit:
            quitting = true
        case .subscribe(let chosen) where !registering:
            // Yes to subscribing with every category off.
            registering = true
            storedSelection = Set(chosen)
        default:
            break
        }
        return [effect]
    }

}
