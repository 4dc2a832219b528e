import BreakingNewsKit
import Foundation

/// Draws the whole frame: header, tabs, the current screen, status, footer, and on top the
/// toast, dialog or help. Below the minimum size it draws only a note saying so.
public enum Layout {
    public static let minimumRows = ScreenGeometry.minimumRows
    public static let minimumColumns = ScreenGeometry.minimumColumns

    /// First row of a screen's content.
    static let contentTop = ScreenGeometry.contentTop

    /// Draws `state` onto `terminal` and presents it.
    public static func render(_ state: AppState, on terminal: Terminal) {
        terminal.clear()
        let canvas = Canvas(terminal)
        let geometry = ScreenGeometry(rows: canvas.rows, columns: canvas.columns)
        guard geometry.fits else {
            drawTooSmall(canvas)
            terminal.placeCursor(row: 0, column: 0, visible: false)
            terminal.present()
            return
        }
        drawHeader(state, canvas)
        drawTabs(state, canvas)
        canvas.rule(row: ScreenGeometry.headerRule)
        var cursor: (row: Int, column: Int)?
        // A screen's content, however long, stops above the footer's rule.
        var content = canvas
        content.bottom = geometry.footerRule
        switch state.screen {
        case .categories: CategoriesScreen.draw(state, content)
        case .compose: cursor = ComposeScreen.draw(state, content)
        case .log: LogScreen.draw(state, content)
        }
        if let placed = cursor, placed.row >= geometry.footerRule { cursor = nil }
        canvas.rule(row: geometry.footerRule)
        drawFooter(state, canvas)
        if let toast = state.toast {
            canvas.bar(" ▶ \(toast.text)", row: contentTop, style: Style(bold: true, reverse: true, color: .accent))
        }
        if let dialog = state.dialog {
            drawBox(
                title: dialog.title,
                lines: Canvas.wrap(dialog.message, width: min(60, canvas.columns - 8))
                    + ["", dialog.confirm == nil ? "[ OK ]  Enter" : "[ Send ]  Enter     [ Cancel ]  Esc"],
                style: Style(color: dialog.isError ? .bad : .accent), canvas)
            cursor = nil
        } else if state.showHelp {
            drawHelp(canvas)
            cursor = nil
        }
        if let cursor {
            terminal.placeCursor(row: cursor.row, column: cursor.column, visible: true)
        } else {
            terminal.placeCursor(row: geometry.footerRow, column: 0, visible: false)
        }
        terminal.present()
    }

    static func drawTooSmall(_ canvas: Canvas) {
        let lines = [
            "Terminal too small", "(\(canvas.columns)×\(canvas.rows); needs \(minimumColumns)×\(minimumRows))",
            "Enlarge it, or q to quit",
        ]
        let top = max(0, (canvas.rows - lines.count) / 2)
        for (i, line) in lines.enumerated() {
            let width = min(TextWidth.of(line), canvas.columns)
            canvas.text(line, row: top + i, column: max(0, (canvas.columns - width) / 2), style: Style(bold: i == 0))
        }
    }

    static func drawHeader(_ state: AppState, _ canvas: Canvas) {
        canvas.text(" Breaking News", row: 0, column: 0, style: Style(bold: true))
        let (text, color) = connectionText(state)
        let hub = state.hub.map { "  \($0)" } ?? ""
        let right = text + hub + " "
        let width = min(TextWidth.of(right), canvas.columns - 16)
        canvas.text(right, row: 0, column: canvas.columns - width, style: Style(color: color), width: width)
    }

    /// The connection as the header says it.
    static func connectionText(_ state: AppState) -> (String, Style.Color) {
        switch state.connection {
        case .connecting: return ("◌ connecting…", .warning)
        case .online: return ("● online", .good)
        case .reconnecting(let seconds, _):
            let left = state.reconnectAt.map { max(0, Int($0.timeIntervalSince(state.now).rounded(.up))) } ?? Int(seconds)
            return ("◌ reconnecting in \(left) s", .warning)
        case .offline(let reason): return ("○ offline: \(reason)", .bad)
        case .stopped: return ("○ stopped", .muted)
        }
    }

    /// Tab labels and where they are, for drawing and for mouse clicks.
    static func tabRanges(_ state: AppState, unread: Int? = nil) -> [(ScreenID, Range<Int>)] {
        let unread = unread ?? state.unreadTotal
        var column = 1
        var result: [(ScreenID, Range<Int>)] = []
        for screen in ScreenID.allCases {
            let width = TextWidth.of(tabLabel(screen, unread: unread))
            result.append((screen, column..<(column + width)))
            column += width + 2
        }
        return result
    }

    static func tabLabel(_ screen: ScreenID, unread: Int) -> String {
        if screen == .log, unread > 0 { return " \(screen.rawValue + 1) \(screen.title) (\(unread)) " }
        return " \(screen.rawValue + 1) \(screen.title) "
    }

    static func drawTabs(_ state: AppState, _ canvas: Canvas) {
        let unread = state.unreadTotal
        for (screen, range) in tabRanges(state, unread: unread) {
            let current = screen == state.screen
            canvas.text(
                tabLabel(screen, unread: unread), row: 1, column: range.lowerBound, style: Style(bold: current, reverse: current))
        }
    }

    static func drawFooter(_ state: AppState, _ canvas: Canvas) {
        let hints: [(String, String)]
        if let dialog = state.dialog {
            hints = dialog.confirm == nil ? [("Enter", "close")] : [("Enter", "send"), ("Esc", "cancel")]
        } else if state.showHelp {
            hints = [("any key", "close help")]
        } else if state.screen == .log, state.log.searching {
            hints = [("/", state.log.search + "▏"), ("Enter", "keep"), ("Esc", "cancel")]
        } else if state.isEditingText {
            hints = [("Enter", "send"), ("Esc/↓", "categories"), ("Tab", "next screen"), ("Ctrl-U", "delete to start")]
        } else {
            hints = KeyMap.footer(for: state.screen)
        }
        var column = 1
        let row = state.geometry.footerRow
        for (label, summary) in hints {
            let keyWidth = canvas.text(label, row: row, column: column, style: Style(bold: true, color: .accent))
            let used = canvas.text(" \(summary)", row: row, column: column + keyWidth)
            column += keyWidth + used + 2
            if column >= canvas.columns { break }
        }
    }

    /// A centred box with a title.
    static func drawBox(title: String, lines: [String], style: Style, _ canvas: Canvas) {
        let inner = min(max(TextWidth.of(title) + 4, lines.map(TextWidth.of).max() ?? 0), canvas.columns - 6)
        let height = min(lines.count, canvas.rows - 6)
        let top = max(1, (canvas.rows - height - 2) / 2)
        let left = max(1, (canvas.columns - inner - 4) / 2)
        let titleText = " \(title) "
        let dashes = max(0, inner + 2 - TextWidth.of(titleText))
        canvas.text(
            "┌" + titleText + String(repeating: "─", count: dashes) + "┐", row: top, column: left,
            style: Style(bold: true, color: style.color))
        for i in 0..<height {
            canvas.text("│ " + TextWidth.pad(lines[i], to: inner) + " │", row: top + 1 + i, column: left)
        }
        canvas.text(
            "└" + String(repeating: "─", count: inner + 2) + "┘", row: top + 1 + height, column: left,
            style: Style(color: style.color))
    }

    /// The help overlay, generated from the key map; in two columns when one does not fit.
    static func drawHelp(_ canvas: Canvas) {
        let labelWidth = KeyMap.helpLines.map { TextWidth.of($0.label) }.max() ?? 8
        var sections: [[String]] = []
        var scope = ""
        for line in KeyMap.helpLines {
            if line.scope != scope {
                sections.append([line.scope.prefix(1).uppercased() + line.scope.dropFirst()])
                scope = line.scope
            }
            sections[sections.count - 1].append("  " + TextWidth.pad(line.label, to: labelWidth) + "  " + line.summary)
        }
        let single = sections.enumerated().flatMap { $0.offset == 0 ? $0.element : [""] + $0.element }
        let room = canvas.rows - 6
        guard single.count > room else {
            drawBox(title: "Keys", lines: single, style: Style(color: .accent), canvas)
            return
        }
        // Two columns, sections kept whole, split where the halves are closest.
        var left: [String] = []
        var right: [String] = []
        let half = (single.count + 1) / 2
        for section in sections {
            if left.count + section.count <= half || left.isEmpty {
                left += (left.isEmpty ? [] : [""]) + section
            } else {
                right += (right.isEmpty ? [] : [""]) + section
            }
        }
        let columnWidth = min(left.map(TextWidth.of).max() ?? 0, (canvas.columns - 10) / 2)
        let lines = (0..<max(left.count, right.count)).map { i in
            TextWidth.pad(i < left.count ? left[i] : "", to: columnWidth) + "  " + (i < right.count ? right[i] : "")
        }
        drawBox(title: "Keys", lines: lines, style: Style(color: .accent), canvas)
    }

}
