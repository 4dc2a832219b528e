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
        // A note in the footer's row while it shows, as a status line: never over a title.
        if let toast = state.toast {
            canvas.bar(" ▶ \(toast.text)", row: geometry.footerRow, style: Style(bold: true, reverse: true, color: .accent))
        }
        if let overlay = overlay(state, geometry) {
            // The link chooser over the message view: the message stays behind it.
            if state.chooser != nil, state.dialog != nil, let under = Self.overlay(state, geometry, chooser: false) {
                drawBox(under, top: state.overlayTop, canvas)
            }
            drawBox(overlay, top: state.chooser == nil ? state.overlayTop : 0, canvas)
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
        var hub = state.hub.map { "  \($0)" } ?? ""
        // The connection's state is the truth the header tells: the hub's name gives way to it.
        if TextWidth.of(text + hub + " ") > canvas.columns - 16, TextWidth.of(text + " ") <= canvas.columns - 16 {
            hub = ""
        }
        let right = text + hub + " "
        let width = min(TextWidth.of(right), canvas.columns - 16)
        canvas.text(right, row: 0, column: canvas.columns - width, style: Style(color: color), width: width)
    }

    /// The connection as the header says it.
    static func connectionText(_ state: AppState) -> (String, Style.Color) {
        switch state.connection {
        case .connecting: return (state.startingHub ? "◌ starting the local hub…" : "◌ connecting…", .warning)
        case .online: return ("● online", .good)
        case .reconnecting(let seconds, _):
            let left = state.reconnectAt.map { max(0, Int($0.timeIntervalSince(state.now).rounded(.up))) } ?? Int(seconds)
            return ("◌ reconnecting in \(left) s (r: now)", .warning)
        case .offline(.hubStopped): return ("○ local hub stopped (r: start it)", .bad)
        case .offline(.notRegistered): return ("○ not registered: news is not reaching this terminal", .warning)
        case .offline(.noPushService): return ("○ no push service on this hub", .bad)
        case .offline(.refused(let detail)), .offline(.unavailable(let detail)):
            return ("○ offline (r: retry): \(detail)", .bad)
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
        var hints = footerHints(state)
        if let overlay = overlay(state, state.geometry), overlay.lines.count > overlayRows(state.geometry) {
            hints.insert(("↑↓ PgUp PgDn", "scroll"), at: 0)
        }
        drawHints(hints, row: state.geometry.footerRow, canvas)
    }

    /// The footer's key hints for what is on screen.
    static func footerHints(_ state: AppState) -> [(String, String)] {
        let keys = state.keyMap
        var hints: [(String, String)]
        if let prompt = state.pipePrompt {
            hints = [("|", "command: " + prompt.command + "▏"), ("Enter", "run"), ("Esc", "cancel")]
        } else if let chooser = state.chooser {
            hints = [("↑/↓", "choose"), ("Enter", chooser.purpose == .open ? "open" : "copy"), ("Esc", "cancel")]
        } else if let dialog = state.dialog, dialog.entry != nil {
            hints = [("Enter", "close")]
            let moves = [keys.label(of: .down, on: .log), keys.label(of: .up, on: .log)].compactMap { label in
                label.split(separator: "/").first { $0.count == 1 && $0.first?.isLetter == true }.map(String.init)
            }
            if moves.count == 2 { hints.append((moves.joined(separator: "/"), "next/previous")) }
            for (command, hint) in [(Command.openLink, "open link"), (.copy, "copy"), (.pipe, "pipe")] {
                let label = state.keyMap.label(of: command, on: .log)
                if !label.isEmpty { hints.append((label, hint)) }
            }
        } else if let dialog = state.dialog {
            hints = dialog.isQuestion ? [("Enter", dialog.confirmLabel), ("Esc", "cancel")] : [("Enter", "close")]
        } else if state.showHelp {
            hints = [("any other key", "close help")]
        } else if state.screen == .log, state.log.searching {
            hints = [("/", state.log.search + "▏")]
            if !state.log.search.isEmpty {
                hints.append((LogScreen.matchesText(state.log.matches, at: state.log.matchOrdinal), ""))
            }
            hints += [("Enter", "keep"), ("Esc", "cancel")]
        } else if state.screen == .log, state.log.deletedView != nil {
            hints = LogScreen.deletedFooter(state)
        } else if state.screen == .log, state.log.picker != nil {
            hints = [("↑/↓", "choose"), ("Space", "switch"), ("Enter", "show"), ("Esc", "close")]
        } else if state.isEditingText {
            hints = [
                ("Enter", "send"), ("Alt-Enter", "new line"), ("↑", "last sends"), ("Ctrl-X Ctrl-E", "editor"),
                ("Esc", "categories"), ("Tab", "next screen"),
            ]
        } else if state.screen == .compose, case .category = state.compose.focus {
            // Letters are text here: the footer names the keys that are not.
            let boxes = [keys.label(of: .left, on: .compose), keys.label(of: .right, on: .compose)].filter { !$0.isEmpty }
            hints = [
                (boxes.joined(separator: "/"), "box"), (keys.label(of: .toggle, on: .compose), "check"), ("Enter", "send"),
                ("↑", "message"), ("↓", "Send"), ("letters", "type the message"), (keys.label(of: .help), "help"),
                ("Ctrl-C", "quit"),
            ]
        } else if state.screen == .compose, case .result(let i) = state.compose.focus {
            let failed = state.compose.results[safe: i].map { !$0.succeeded } ?? false
            hints = [
                ("Enter", failed ? "details" : "explain"), ("↑", "up"), ("↓", "down"),
                ("Esc", "message"), (keys.label(of: .help), "help"), ("Ctrl-C", "quit"),
            ]
        } else if state.screen == .compose, state.compose.focus == .send {
            hints = [
                ("Enter", "send"), ("↑", "up"), ("↓", "results"), ("Esc", "message"),
                (keys.label(of: .help), "help"), ("Ctrl-C", "quit"),
            ]
        } else {
            hints = keys.footer(for: state.screen)
        }
        hints.removeAll { $0.0.isEmpty }
        return hints
    }

    /// Key hints from the left, each whole: when they do not all fit, the first ones that do,
    /// then "…" and the help key.
    static func drawHints(_ hints: [(String, String)], row: Int, _ canvas: Canvas) {
        let gap = 2
        func width(_ hint: (String, String)) -> Int { TextWidth.of(hint.0) + 1 + TextWidth.of(hint.1) }
        let room = canvas.columns - 1
        var shown = hints
        var tail: [(String, String)] = []
        if hints.map(width).reduce(0, +) + gap * max(0, hints.count - 1) > room {
            let help = hints.first { $0.1 == "help" }
            tail = [("…", "")] + (help.map { [$0] } ?? [])
            if tail.map(width).reduce(0, +) + gap * (tail.count - 1) > room { tail = [("…", "")] }
            let reserved = tail.map(width).reduce(0, +) + gap * tail.count
            shown = []
            var used = 0
            for hint in hints where hint.1 != "help" {
                let next = used + width(hint) + (shown.isEmpty ? 0 : gap)
                if next + reserved > room { break }
                shown.append(hint)
                used = next
            }
        }
        var column = 1
        for (label, summary) in shown + tail {
            let keyWidth = canvas.text(label, row: row, column: column, style: Style(bold: true, color: .accent))
            let used = summary.isEmpty ? 0 : canvas.text(" \(summary)", row: row, column: column + keyWidth)
            column += keyWidth + used + gap
            if column >= canvas.columns { break }
        }
    }

    /// What a box over the screen shows: its title, lines and colour.
    struct Overlay {
        var title: String
        var lines: [String]
        var style: Style
        /// The web links in the lines are drawn as hyperlinks (the message view).
        var links = false
    }

    /// The dialog or the help on screen, laid out for the screen's size.
    static func overlay(_ state: AppState, _ geometry: ScreenGeometry, chooser: Bool = true) -> Overlay? {
        if chooser, state.chooser != nil {
            let title = state.chooser?.purpose == .open ? "Open which link?" : "Copy what?"
            return Overlay(title: title, lines: state.chooserLines(), style: Style(color: .accent))
        }
        if let dialog = state.dialog, let entry = dialog.entry {
            return Overlay(
                title: dialog.title, lines: messageLines(entry, state, width: min(96, geometry.columns - 8)),
                style: Style(color: .accent), links: true)
        }
        if let dialog = state.dialog {
            let yes = dialog.confirmLabel.prefix(1).uppercased() + dialog.confirmLabel.dropFirst()
            return Overlay(
                title: dialog.title,
                lines: Canvas.wrap(dialog.message, width: min(60, geometry.columns - 8))
                    + ["", dialog.isQuestion ? "[ \(yes) ]  Enter     [ Cancel ]  Esc" : "[ OK ]  Enter"],
                style: Style(color: dialog.isError ? .bad : .accent))
        }
        if state.screen == .log, state.log.picker != nil {
            return Overlay(title: "Show", lines: state.filterLines(), style: Style(color: .accent))
        }
        guard state.showHelp else { return nil }
        return Overlay(title: "Keys", lines: helpLines(state.keyMap, geometry), style: Style(color: .accent))
    }

    /// The message view's lines: when it was sent (and received, when that was more than a
    /// minute later), its category and id, then its text wrapped at spaces, every link whole
    /// on one line.
    static func messageLines(_ entry: InboxEntry, _ state: AppState, width: Int) -> [String] {
        var lines = ["Sent      " + DisplayTime.full(entry.sentAt)]
        if entry.receivedLate { lines.append("Received  " + DisplayTime.full(entry.receivedAt)) }
        lines.append("Category  " + (entry.category ?? "—"))
        lines.append("Id        " + TextWidth.printable(entry.notificationId))
        let links = WebLinks.find(in: entry.text).count
        if links > 0 {
            let keys = [(Command.openLink, "opens"), (.copy, "copies")].compactMap { command, verb in
                let label = state.keyMap.label(of: command, on: .log)
                return label.isEmpty ? nil : "\(label) \(verb)"
            }
            lines.append("Links     \(links)" + (keys.isEmpty ? "" : "  (\(keys.joined(separator: ", ")))"))
        }
        return lines + [""] + Canvas.wrap(entry.text, width: width) + ["", "[ OK ]  Enter"]
    }

    /// Rows a box's lines have on a screen: the box and a row of screen above and below.
    static func overlayRows(_ geometry: ScreenGeometry) -> Int { max(1, geometry.rows - 6) }

    /// A centred box with a title, showing `lines` from `top`; when they do not all fit,
    /// the title says which are shown ("1–6 of 23 ↑↓") and the keys scroll them.
    static func drawBox(_ overlay: Overlay, top: Int, _ canvas: Canvas) {
        let lines = overlay.lines
        let height = min(lines.count, overlayRows(ScreenGeometry(rows: canvas.rows, columns: canvas.columns)))
        let first = max(0, min(top, lines.count - height))
        var title = overlay.title
        // The box is as wide as its widest title, so it keeps its width while it scrolls.
        var widest = title
        if height < lines.count {
            title += " · \(first + 1)–\(first + height) of \(lines.count) ↑↓"
            widest += " · \(lines.count)–\(lines.count) of \(lines.count) ↑↓"
        }
        let inner = min(max(TextWidth.of(widest) + 4, lines.map(TextWidth.of).max() ?? 0), canvas.columns - 6)
        let boxTop = max(1, (canvas.rows - height - 2) / 2)
        let left = max(1, (canvas.columns - inner - 4) / 2)
        // A blank cell each side, so what the box covers does not show at its edges.
        for row in boxTop...(boxTop + height + 1) {
            canvas.text(" ", row: row, column: left - 1)
            canvas.text(" ", row: row, column: left + inner + 4)
        }
        let titleText = TextWidth.truncate(" \(title) ", to: inner + 2)
        let dashes = max(0, inner + 2 - TextWidth.of(titleText))
        canvas.text(
            "┌" + titleText + String(repeating: "─", count: dashes) + "┐", row: boxTop, column: left,
            style: Style(bold: true, color: overlay.style.color))
        for i in 0..<height {
            let line = lines[first + i]
            let shown = TextWidth.of(line) > inner ? TextWidth.truncate(line, to: inner) : line
            canvas.text("│ " + TextWidth.pad(shown, to: inner) + " │", row: boxTop + 1 + i, column: left)
            // A link drawn whole is a hyperlink too, where the terminal takes them.
            guard overlay.links, shown == line else { continue }
            for range in WebLinks.ranges(in: line) {
                let column = left + 2 + TextWidth.of(String(line[..<range.lowerBound]))
                canvas.link(String(line[range]), row: boxTop + 1 + i, column: column)
            }
        }
        canvas.text(
            "└" + String(repeating: "─", count: inner + 2) + "┘", row: boxTop + 1 + height, column: left,
            style: Style(color: overlay.style.color))
    }

    /// The help, generated from the key map: one column, or two when one is too long for the
    /// screen and two fit side by side.
    static func helpLines(_ keys: KeyMap = .standard, _ geometry: ScreenGeometry) -> [String] {
        let help = keys.helpLines
        let labelWidth = help.map { TextWidth.of($0.label) }.max() ?? 8
        // Each description wrapped to `width` (a column's), under its first words.
        func sections(width: Int) -> [[String]] {
            var sections: [[String]] = []
            var scope = ""
            for line in help {
                if line.scope != scope {
                    sections.append([line.scope.prefix(1).uppercased() + line.scope.dropFirst()])
                    scope = line.scope
                }
                let parts = Canvas.wrap(line.summary, width: max(12, width - labelWidth - 4))
                for (i, part) in (parts.isEmpty ? [""] : parts).enumerated() {
                    let label = TextWidth.pad(i == 0 ? line.label : "", to: labelWidth)
                    sections[sections.count - 1].append("  " + label + "  " + part)
                }
            }
            return sections
        }
        let single = sections(width: geometry.columns - 6).enumerated().flatMap {
            $0.offset == 0 ? $0.element : [""] + $0.element
        }
        let columnWidth = (geometry.columns - 10) / 2
        // Two columns only where a summary keeps room for its first words.
        guard single.count > overlayRows(geometry), columnWidth >= labelWidth + 24 else { return single }
        let narrow = sections(width: columnWidth)
        // Two columns, sections kept whole, split where the halves are closest.
        var left: [String] = []
        var right: [String] = []
        let half = (narrow.reduce(narrow.count - 1) { $0 + $1.count } + 1) / 2
        for section in narrow {
            if left.count + section.count <= half || left.isEmpty {
                left += (left.isEmpty ? [] : [""]) + section
            } else {
                right += (right.isEmpty ? [] : [""]) + section
            }
        }
        let width = min(left.map(TextWidth.of).max() ?? 0, columnWidth)
        return (0..<max(left.count, right.count)).map { i in
            TextWidth.pad(i < left.count ? left[i] : "", to: width) + "  " + (i < right.count ? right[i] : "")
        }
    }
}
