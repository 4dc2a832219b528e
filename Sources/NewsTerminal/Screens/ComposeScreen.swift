import BreakingNewsKit
import Foundation

/// Compose and send breaking news per category.
enum ComposeScreen {
    /// Draws the screen; returns where the text cursor goes when the field has focus.
    static func draw(_ state: AppState, _ c: Canvas) -> (row: Int, column: Int)? {
        let compose = state.compose
        // A short screen drops the title, the blank lines and the labels, so Send and its
        // results stay in sight.
        let roomy = !state.geometry.isCompact
        var row = ScreenGeometry.contentTop
        let field = state.composeField
        let height = state.geometry.composeFieldRows
        let top = field.top(from: compose.fieldTop, height: height)
        let fieldFocused = compose.focus == .text
        if roomy {
            c.text("  Send breaking news", row: row, column: 0, style: Style(bold: true))
            c.text("  Message", row: row + 2, column: 0, style: Style(bold: fieldFocused))
            if field.rows.count > 1 {
                c.text(
                    "line \(field.cursorRow + 1) of \(field.rows.count)", row: row + 2, column: 11,
                    style: Style(color: .muted))
            }
            row += 3
        }
        let cursor = drawField(state, field, top: top, height: height, row: row, c)
        row += height
        c.text("   Level: normal   Expires: never   Story: none", row: row, column: 0, style: Style(color: .muted))
        row += 1
        drawAudience(state, row: row, c)
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
        if !compose.results.isEmpty, !(compose.focus.isResult) {
            c.text("↓ to the results, Enter explains one", row: row, column: 27, style: Style(color: .muted))
        }
        row += roomy ? 2 : 1
        if let error = compose.error {
            c.text("  " + error, row: row, column: 0, style: Style(color: .bad))
            row += 1
        }
        drawResults(state, from: row, c)
        return cursor
    }

    /// The message field's rows from `top`; the gutter marks rows hidden above (▲) and below
    /// (▼). Returns the cursor's cell when the field has the keys.
    private static func drawField(
        _ state: AppState, _ field: ComposeField, top: Int, height: Int, row: Int, _ c: Canvas
    ) -> (row: Int, column: Int)? {
        let focused = state.compose.focus == .text
        let width = state.geometry.composeFieldWidth
        for i in 0..<height {
            let index = top + i
            let more = (i == 0 && top > 0) || (i == height - 1 && index < field.rows.count - 1)
            let gutter = more ? (i == 0 ? "▲" : "▼") : "▏"
            c.text("  " + gutter, row: row + i, column: 0, style: Style(color: focused ? .accent : .muted))
            let text = index < field.rows.count ? field.text(of: field.rows[index], in: state.compose.text) : ""
            c.text(TextWidth.pad(text, to: width), row: row + i, column: 3, style: Style(underline: true))
        }
        guard focused, field.cursorRow >= top, field.cursorRow < top + height else { return nil }
        return (row + field.cursorRow - top, 3 + min(field.cursorColumn, width - 1))
    }

    /// The audience line: the bytes the send carries (the ones counted against the limit, as
    /// the refusal counts them) and the categories it goes to.
    private static func drawAudience(_ state: AppState, row: Int, _ c: Canvas) {
        let bytes = state.compose.sentBytes
        let counter = "   \(bytes)/\(Publisher.maximumTextBytes) bytes"
        c.text(counter, row: row, column: 0, style: Style(color: bytes > Publisher.maximumTextBytes ? .bad : .muted))
        let chosen = state.categories.indices.filter { state.compose.checked[$0] }.map { state.categories[$0].name }
        let audience = chosen.isEmpty ? "no category checked" : "to " + chosen.joined(separator: ", ")
        let column = TextWidth.of(counter)
        c.text(" · " + audience, row: row, column: column, style: Style(color: .muted), width: c.columns - column - 1)
    }

    private static func drawResults(_ state: AppState, from first: Int, _ c: Canvas) {
        let compose = state.compose
        var row = first
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
    }
}

extension AppState.ComposeFocus {
    var isResult: Bool { if case .result = self { return true } else { return false } }
}

extension AppState.Compose {
    /// The bytes a send of the field carries: its text as `Publisher.validate` leaves it
    /// (white space at either end trimmed).
    var sentBytes: Int { String(text).trimmingCharacters(in: .whitespacesAndNewlines).utf8.count }
}

extension AppState {
    /// The message field as the screen lays it out now.
    var composeField: ComposeField {
        ComposeField(text: compose.text, cursor: compose.cursor, width: geometry.composeFieldWidth)
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
            compose.error = nil
        case (.toggle, .category(let i)):
            compose.checked[i].toggle()
            // "check at least one category" is answered.
            compose.error = nil
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
            compose.error = nil
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
        case .paste,
            .control("x") where keyMap.command(for: key, on: .compose) == nil:
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
            compose.error = "Cannot send: check at least one category (↓ to the boxes, Space checks one)."
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
        case .send(let text, let chosen):
            compose.sending = true
            compose.inFlight = compose.text
            compose.inFlightSend = SentMessage(text: text, categories: chosen.map(\.name), sentAt: now)
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
