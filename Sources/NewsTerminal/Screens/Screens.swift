import BreakingNewsKit
import Foundation

/// The tutorial's switch screen: six categories, each with a switch, and Subscribe.
enum CategoriesScreen {
    static let firstRow = ScreenGeometry.listTop

    static func draw(_ state: AppState, _ c: Canvas) {
        c.text("  Breaking News", row: Layout.contentTop, column: 0, style: Style(bold: true))
        c.text(
            "— choose the categories that reach this terminal", row: Layout.contentTop, column: 17, style: Style(color: .muted))
        let unread = state.unread
        for (i, name) in state.categories.enumerated() {
            let row = firstRow + i
            let focused = state.categoryCursor == i
            let on = state.switches.contains(name)
            c.text(focused ? " ▸" : "  ", row: row, column: 0, style: Style(bold: true, color: .accent))
            c.text(
                on ? "[  ON ]" : "[ OFF ]", row: row, column: 3, style: Style(bold: on, reverse: on, color: on ? .good : .muted))
            c.text(name, row: row, column: 11, style: Style(bold: focused, underline: focused), width: 14)
            if let count = unread[name] {
                c.text("\(count) unread", row: row, column: 26, style: Style(color: .accent))
            }
        }
        let buttonRow = firstRow + state.categories.count + 1
        let onButton = state.categoryCursor == state.categories.count
        c.text(onButton ? " ▸" : "  ", row: buttonRow, column: 0, style: Style(bold: true, color: .accent))
        c.text(
            state.registering ? "[ Subscribing… ]" : "[ Subscribe ]", row: buttonRow, column: 3,
            style: Style(bold: true, reverse: onButton))
        var row = buttonRow + 2
        let (status, color) = registrationText(state)
        for line in Canvas.wrap(status, width: c.columns - 4).prefix(2) {
            c.text("  " + line, row: row, column: 0, style: Style(color: color))
            row += 1
        }
        if state.switches != state.storedSelection, !state.registering {
            c.text(
                "  Unsaved changes: press s (or Subscribe) to store and register them.", row: row, column: 0,
                style: Style(color: .warning))
        }
    }

    static func registrationText(_ state: AppState) -> (String, Style.Color) {
        if state.registering { return ("Registering…", .warning) }
        guard let record = state.registration else { return ("Not registered yet: choose categories and press s.", .muted) }
        let names = record.categories.isEmpty ? "no categories" : record.categories.joined(separator: ", ")
        let at = shortTime(record.at)
        switch record.state {
        case .registered: return ("✓ Registered \(names) at \(at)", .good)
        case .pending: return ("… Pending since \(at): the hub could not be reached; retrying", .warning)
        case .failed: return ("✗ Failed at \(at): \(record.detail ?? "refused")", .bad)
        }
    }
}

/// Compose and send breaking news per category.
enum ComposeScreen {
    /// Draws the screen; returns where the text cursor goes when the field has focus.
    static func draw(_ state: AppState, _ c: Canvas) -> (row: Int, column: Int)? {
        let compose = state.compose
        var row = Layout.contentTop
        c.text("  Send breaking news", row: row, column: 0, style: Style(bold: true))
        row += 2
        let fieldFocused = compose.focus == .text
        c.text("  Message", row: row, column: 0, style: Style(bold: fieldFocused))
        row += 1
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
        row += 2
        c.text("  Categories", row: row, column: 0)
        row += 1
        var column = 3
        for (i, name) in state.categories.enumerated() {
            let box = (compose.checked[i] ? "[x] " : "[ ] ") + name
            let width = TextWidth.of(box)
            if column + width > c.columns - 1 {
                row += 1
                column = 3
            }
            let focused = compose.focus == .category(i)
            c.text(box, row: row, column: column, style: Style(bold: focused, reverse: focused))
            column += width + 3
        }
        row += 2
        let sendFocused = compose.focus == .send
        c.text(
            compose.sending ? "[ Sending… ]" : "[ Send Notification ]", row: row, column: 3,
            style: Style(bold: true, reverse: sendFocused))
        row += 2
        if let error = compose.error {
            c.text("  " + error, row: row, column: 0, style: Style(color: .bad))
            row += 1
        }
        for result in compose.results where row < state.geometry.footerRule {
            c.text("  " + TextWidth.pad(result.category, to: 12), row: row, column: 0)
            c.text(
                result.succeeded ? "✓ sent  " : "✗ failed  ", row: row, column: 14,
                style: Style(color: result.succeeded ? .good : .bad))
            c.text(result.detail, row: row, column: result.succeeded ? 22 : 24, style: Style(color: .muted))
            row += 1
        }
        return cursor
    }

    /// The part of the text that fits, scrolled to keep the cursor in view, and the
    /// cursor's column within it.
    static func fieldWindow(_ text: [Character], cursor: Int, width: Int) -> (String, Int) {
        let clean = text.map { TextWidth.printable(String($0)).first ?? " " }
        var start = 0
        while TextWidth.of(String(clean[start..<cursor])) > width - 1 { start += 1 }
        var end = start
        var used = 0
        while end < clean.count, used + TextWidth.of(clean[end]) <= width {
            used += TextWidth.of(clean[end])
            end += 1
        }
        return (String(clean[start..<end]), TextWidth.of(String(clean[start..<cursor])))
    }
}

/// The received messages, newest first.
enum LogScreen {
    static func draw(_ state: AppState, _ c: Canvas) {
        let count = state.visibleCount
        let filter = state.log.filter ?? "all categories"
        c.text("  Received", row: Layout.contentTop, column: 0, style: Style(bold: true))
        var title = "\(filter) · \(count) message\(count == 1 ? "" : "s")"
        if !state.log.search.isEmpty { title += " · search “\(state.log.search)”" }
        c.text(title, row: Layout.contentTop, column: 12, style: Style(color: .muted))
        let top = ScreenGeometry.listTop
        guard count > 0 else {
            c.text(
                "  Nothing received yet. Subscribe on screen 1; messages appear here as they arrive.", row: top, column: 0,
                style: Style(color: .muted))
            return
        }
        let page = state.visibleItems(state.log.top..<(state.log.top + state.logPageSize))
        for (offset, item) in page.enumerated() {
            let row = top + offset
            let index = state.log.top + offset
            let selected = index == state.log.cursor
            let match = state.matchesSearch(item)
            let line =
                (item.unread ? " ● " : "   ") + shortTime(item.entry.receivedAt) + "  "
                + TextWidth.pad(item.entry.category ?? "—", to: 11) + " " + item.entry.text
            let style = Style(bold: item.unread || match, reverse: selected, color: match ? .warning : .normal)
            c.text(TextWidth.pad(line, to: c.columns), row: row, column: 0, style: style)
        }
        if count > state.logPageSize {
            let position = "\(state.log.cursor + 1)/\(count)"
            c.text(
                position, row: state.geometry.positionRow, column: c.columns - TextWidth.of(position) - 1,
                style: Style(color: .muted))
        }
    }
}

func shortTime(_ w3c: String) -> String { DisplayTime.short(w3c) }
