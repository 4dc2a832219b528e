import BreakingNewsKit
import Foundation

/// The received messages, newest (or oldest) first by the time each was sent, under a
/// separator for each day.
enum LogScreen {
    static func draw(_ state: AppState, _ c: Canvas) {
        if let view = state.log.deletedView { return drawDeleted(state, view, c) }
        let count = state.visibleCount
        let filter = state.log.filter?.name ?? "all categories"
        // A notice that messages expired is listed, not counted as a message.
        let messages = state.isLimited ? count : count - state.notices
        var title = "\(state.limitText) · \(messages) message\(messages == 1 ? "" : "s")"
        let unread = state.log.filter.map { state.unread[$0.name] ?? 0 } ?? state.unreadTotal
        if unread > 0 { title += " · \(unread) unread" }
        if state.log.order == .oldestFirst { title += " · oldest first" }
        if !state.log.search.isEmpty {
            title += " · search “\(state.log.search)” · \(matchesText(state.log.matches, at: state.log.matchOrdinal))"
        }
        // On a narrow screen the counts go before the heading's word.
        let titleColumn = 12 + TextWidth.of(title) <= c.columns ? 12 : 2
        if titleColumn == 12 { c.text("  Received", row: ScreenGeometry.contentTop, column: 0, style: Style(bold: true)) }
        c.text(title, row: ScreenGeometry.contentTop, column: titleColumn, style: Style(color: .muted))
        let top = ScreenGeometry.listTop
        guard count > 0 else {
            let empty =
                !state.isLimited
                ? "  Nothing received yet. Subscribe on screen 1; messages appear here as they arrive."
                : state.log.unreadLimit == nil && state.log.matchLimit == nil
                    ? "  No \(filter) messages. Esc shows every message."
                    : "  Nothing to show: \(state.limitText). Esc shows every message."
            c.text(empty, row: top, column: 0, style: Style(color: .muted))
            return
        }
        let page = page(state, from: state.log.top)
        // The day of the page's first message, on the line above the list.
        if let day = page.day {
            let label = "  " + day + " "
            c.text(
                label + String(repeating: "─", count: max(0, c.columns - TextWidth.of(label))), row: top - 1, column: 0,
                style: Style(color: .muted))
        }
        drawNewMarker(state, shown: page.lines.compactMap(\.entry).count, c)
        let time = DisplayTime.TimeColumn(now: state.now)
        let needle = SearchText.fold(state.log.search)
        var index = state.log.top
        for (offset, line) in page.lines.enumerated() {
            let row = top + offset
            guard let entry = line.entry else {
                let label = "  " + (line.day ?? "") + " "
                c.text(
                    label + String(repeating: "─", count: max(0, c.columns - TextWidth.of(label))), row: row, column: 0,
                    style: Style(color: .muted))
                continue
            }
            drawRow(entry, selected: index == state.log.cursor, needle: needle, time: time, state, row: row, c)
            index += 1
        }
        if count > state.logPageSize {
            let position = "\(state.log.cursor + 1)/\(count)"
            c.text(
                position, row: state.geometry.positionRow, column: c.columns - TextWidth.of(position) - 1,
                style: Style(color: .muted))
        }
    }

    /// New messages on the newest side of what is on screen, while the cursor is not
    /// following the newest: above it newest first, below it oldest first.
    private static func drawNewMarker(_ state: AppState, shown: Int, _ c: Canvas) {
        if state.log.order == .newestFirst {
            let above = min(state.log.newAbove, state.log.top)
            guard above > 0 else { return }
            // At the end of the day's line above the list.
            let marker = " ↑ \(above) new above · g newest "
            c.text(
                marker, row: ScreenGeometry.listTop - 1, column: max(0, c.columns - TextWidth.of(marker) - 1),
                style: Style(bold: true, color: .accent))
        } else {
            let below = min(state.log.newAbove, max(0, state.visibleCount - state.log.top - shown))
            guard below > 0 else { return }
            c.text(
                "  ↓ \(below) new below · G newest", row: state.geometry.positionRow, column: 0,
                style: Style(bold: true, color: .accent))
        }
    }

    /// One message's row: unread mark, send time, category, text (the search's match
    /// highlighted), and when it was received, when that was more than a minute later.
    private static func drawRow(
        _ entry: InboxEntry, selected: Bool, needle: String, time: DisplayTime.TimeColumn, _ state: AppState, row: Int,
        _ c: Canvas
    ) {
        if entry.gap != nil {
            // A notice in the messages' place, not one of them: no mark, no category.
            let notice = "   " + time.text(entry.sentAt) + "  ⋯ " + TextWidth.printable(entry.text)
            c.text(TextWidth.pad(notice, to: c.columns), row: row, column: 0, style: Style(reverse: selected, color: .muted))
            return
        }
        let unread = state.isUnread(entry)
        // The category has its column: the text does not say it again. One line: its line
        // breaks are spaces before it is measured, so nothing is cut that fits.
        let text = TextWidth.printable(entry.category.map { NewsCatalog.headline(entry.text, category: $0) } ?? entry.text)
        let start = (unread ? " ● " : "   ") + time.text(entry.sentAt) + "  " + TextWidth.pad(entry.category ?? "—", to: 11) + " "
        let style = Style(bold: unread, reverse: selected)
        // Received more than a minute after it was sent: when it came, at the row's end,
        // when the row has room for the text beside it.
        var received = entry.receivedLate ? " received " + DisplayTime.short(entry.receivedAt, now: state.now) + " " : ""
        if c.columns - TextWidth.of(received) < 50 { received = "" }
        let width = c.columns - TextWidth.of(received)
        c.text(TextWidth.pad(start + text, to: width), row: row, column: 0, style: style)
        if !received.isEmpty {
            c.text(received, row: row, column: width, style: Style(reverse: selected, color: .muted))
        }
        guard !needle.isEmpty, let match = SearchText.range(of: needle, in: text) else {
            // A match in the category alone: the row is marked.
            if !needle.isEmpty, SearchText.matches(entry, folded: needle) {
                c.text(start, row: row, column: 0, style: Style(bold: true, reverse: selected, color: .warning))
            }
            return
        }
        // The matched text itself, where it is on screen.
        let before = TextWidth.of(start) + TextWidth.of(String(text[..<match.lowerBound]))
        let matched = String(text[match])
        if before < width - 1 {
            c.text(
                matched, row: row, column: before, style: Style(bold: true, reverse: !selected, color: .warning),
                width: width - 1 - before)
        }
    }

    /// A line of the Log's list: a message, or the separator naming the day of those under it.
    struct Line {
        var entry: InboxEntry?
        var day: String?
    }

    /// A page of the list from position `top`: the day of its first message, for the line
    /// above the list, and its lines, each later day's messages under a separator, as many
    /// as the page has rows.
    struct Page {
        var day: String?
        var lines: [Line]
    }

    static func page(_ state: AppState, from top: Int) -> Page {
        let rows = state.logPageSize
        var page = Page(day: nil, lines: [])
        var lastDay: Int?
        for entry in state.visibleItems(top..<(top + rows)) {
            let day = DisplayTime.day(entry.sentSeconds)
            if lastDay == nil {
                page.day = DisplayTime.dayName(entry.sentSeconds, now: state.now)
            } else if day != lastDay {
                // A separator with no message under it on this page is not drawn.
                if page.lines.count + 2 > rows { break }
                page.lines.append(Line(day: DisplayTime.dayName(entry.sentSeconds, now: state.now)))
            }
            lastDay = day
            if page.lines.count >= rows { break }
            page.lines.append(Line(entry: entry))
        }
        return page
    }

    /// How many messages a page from position `top` shows, with their separators.
    static func fitting(_ state: AppState, from top: Int) -> Int {
        max(1, page(state, from: top).lines.reduce(0) { $0 + ($1.entry == nil ? 0 : 1) })
    }

    /// The search's count, and which match the cursor is on when it is on one: "3 of 11".
    static func matchesText(_ count: Int, at ordinal: Int? = nil) -> String {
        if let ordinal, count > 0 { return "\(ordinal) of \(count)" }
        return count == 0 ? "no match" : count == 1 ? "1 match" : "\(count) matches"
    }

    /// The headline of `entry` as a toast names it: one line, at most 40 columns.
    static func shortHeadline(_ entry: InboxEntry) -> String {
        let headline = entry.category.map { NewsCatalog.headline(entry.text, category: $0) } ?? entry.text
        return TextWidth.prefix(TextWidth.printable(headline), fitting: 40)
    }
}
