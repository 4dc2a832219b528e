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

/// The keys of the log screen.
extension AppState {
    /// Rows the log list has on screen.
    var geometry: ScreenGeometry { ScreenGeometry(rows: rows, columns: columns) }
    var logPageSize: Int { geometry.logPageSize }

    /// Where a list's cursor goes for a key that moves it (the caller keeps it in range):
    /// the log's and the deleted view's alike.
    func moved(_ cursor: Int, by command: Command, count: Int) -> Int {
        switch command {
        case .up: return cursor - 1
        case .down: return cursor + 1
        case .pageUp: return cursor - logPageSize
        case .pageDown: return cursor + logPageSize
        case .halfPageUp: return cursor - max(1, logPageSize / 2)
        case .halfPageDown: return cursor + max(1, logPageSize / 2)
        case .top: return 0
        case .bottom: return count - 1
        default: return cursor
        }
    }

    mutating func logCommand(_ command: Command) -> [Effect] {
        if log.deletedView != nil { return deletedViewCommand(command) }
        let count = visibleCount
        let cursorBefore = log.cursor
        var effects: [Effect] = []
        // "3 of 11" holds while the cursor stays on the match it went to.
        if command != .nextMatch && command != .previousMatch { log.matchOrdinal = nil }
        switch command {
        case .up, .down, .pageUp, .pageDown, .halfPageUp, .halfPageDown, .top, .bottom:
            log.cursor = moved(log.cursor, by: command, count: count)
        case .search:
            log.searching = true
            log.search = ""
            log.matches = 0
            log.searchOrigin = log.cursor
        case .nextMatch, .previousMatch:
            if log.search.isEmpty {
                note("No search: / searches")
            } else {
                let forward = command == .nextMatch
                switch jumpToMatch(from: log.cursor + (forward ? 1 : -1), forward: forward) {
                case .none: note("No match for “\(log.search)”")
                case .wrapped: note(forward ? "Search wrapped to the top" : "Search wrapped to the bottom")
                case .moved: break
                }
            }
        case .toggleOrder:
            // The cursor stays on its message, wherever the new order puts it.
            let anchor = entryUnderCursor?.index
            log.order = log.order == .newestFirst ? .oldestFirst : .newestFirst
            log.newAbove = 0
            if let anchor, let position = shownPosition(of: anchor) { log.cursor = position }
            log.searchOrigin = log.cursor
            note(log.order == .newestFirst ? "Newest first" : "Oldest first")
            clampLog()
            return []
        case .chooseFilter:
            // On the category shown, as `c` always opened it; "Unread only" is the row above.
            log.picker = showChoices().firstIndex { $0 == .category(log.filter) } ?? 0
            return []
        case .cancel:
            // Back to every message: no filter, no search.
            guard isLimited || !log.search.isEmpty else { return [] }
            log.filter = nil
            log.unreadLimit = nil
            log.matchLimit = nil
            log.search = ""
            log.matches = 0
            log.cursor = 0
            log.top = 0
            log.newAbove = 0
            return []
        case .open:
            effects += openUnderCursor()
        case .openLink, .copy, .pipe:
            guard let entry = entryUnderCursor else { return [] }
            return act(command, on: entry)
        case .nextUnread, .previousUnread:
            let forward = command == .nextUnread
            switch moveToUnread(forward: forward) {
            case .none: note(log.filter.map { "No unread \($0.name) messages" } ?? "No unread messages")
            case .wrapped: note(forward ? "No unread below: wrapped to the top" : "No unread above: wrapped to the bottom")
            case .moved: break
            }
        case .toggleRead:
            if let entry = entryUnderCursor {
                let one = ReadMarks([entry.index...entry.index])
                effects += changeMarks(isUnread(entry) ? .read(one) : .unread(one))
            }
            return effects
        case .markShownRead:
            let state = self
            let shown = ReadMarks(items.lazy.filter { state.passesFilter($0) && state.isUnread($0) }.map { $0.index...$0.index })
            guard !shown.isEmpty else {
                note("Nothing unread to mark")
                return []
            }
            remember(.markedRead(shown))
            note("Marked \(shown.count) read" + undoHint)
            return changeMarks(.read(shown))
        case .delete:
            guard let entry = entryUnderCursor else { return [] }
            let one = ReadMarks([entry.index...entry.index])
            let headline = LogScreen.shortHeadline(entry)
            remember(.deleted(one, headline: headline))
            note("Deleted “\(headline)”" + undoHint)
            effects += changeMarks(.delete(one))
            recountMatches()
            // The cursor stays where it was, on the message below, which it does not read:
            // the user went nowhere.
            return effects
        case .undo:
            return undoLast()
        case .deletedView:
            // The header says where the user is: no note over it.
            log.deletedView = DeletedView()
            toast = nil
            return []
        default: break
        }
        clampLog()
        // The cursor went to a message: it is read. A new filter only shows another list; the
        // message it puts the cursor on is not chosen by the user.
        if log.cursor != cursorBefore || command == .top || command == .bottom {
            effects += readUnderCursor()
        }
        return effects
    }

    /// Where a move to a message went: nowhere (none is what it looks for), to it, or to it
    /// round the end of the list.
    enum Found: Sendable, Equatable {
        case none, moved, wrapped
    }

    /// Moves the cursor to the next unread message below it (`forward`) or above it, round
    /// the end of the list when there is none that way.
    private mutating func moveToUnread(forward: Bool) -> Found {
        let list = visibleLog
        guard !list.isEmpty else { return .none }
        for step in 1...list.count {
            let unwrapped = forward ? log.cursor + step : log.cursor - step
            let position = (unwrapped % list.count + list.count) % list.count
            if isUnread(list[position]) {
                log.cursor = position
                return position == unwrapped ? .moved : .wrapped
            }
        }
        return .none
    }

    /// Keeps the list as the user reads it when messages arrive: with the cursor on the
    /// newest, it stays on the newest (as `tail -f` does); elsewhere what is on screen stays
    /// put and a marker counts what came above. Either way what arrived stays unread until
    /// the cursor goes to it.
    mutating func followArrivals(_ entries: [InboxEntry], from place: LogPlace) {
        let state = self
        let shown = entries.filter { state.passesFilter($0) && !state.marks.deleted.contains($0.index) }.count
        guard shown > 0 else { return }
        if !log.search.isEmpty { recountMatches() }
        if place.onNewest, !log.searching {
            log.cursor = newestPosition
            clampLog()
            return
        }
        // What the cursor was on stays under it, and what is on screen stays put.
        if let anchor = place.anchor, let position = shownPosition(of: anchor) {
            let moved = position - log.cursor
            log.cursor += moved
            log.top += moved
            log.searchOrigin += moved
        }
        log.newAbove += shown
        if log.matchOrdinal != nil { log.matchOrdinal = matchOrdinal(at: log.cursor) }
        clampLog()
    }

    /// Where the log's cursor is, as arrivals are to keep it: the message it is on, and
    /// whether that is the newest.
    struct LogPlace {
        var anchor: Int?
        var onNewest: Bool
    }

    var logPlace: LogPlace { LogPlace(anchor: entryUnderCursor?.index, onNewest: log.cursor == newestPosition) }

    /// Shows the message under the cursor whole (the message view), which reads it.
    mutating func openUnderCursor() -> [Effect] {
        guard let entry = entryUnderCursor else { return [] }
        dialog = Dialog(title: "Notification", message: entry.text, isError: false, entry: entry)
        overlayTop = 0
        return readUnderCursor()
    }

    /// The message view's own keys, nil for any other: the letters of down and up (`j`, `k`)
    /// show the next and previous message of the list (the arrows scroll a long one); `u`,
    /// `x` and `z` act on the message shown, as on the list.
    mutating func messageViewKey(_ key: Key, _ entry: InboxEntry) -> [Effect]? {
        guard case .character = key, let command = keyMap.command(for: key, on: .log) else { return nil }
        switch command {
        case .down, .up:
            let target = log.cursor + (command == .down ? 1 : -1)
            guard target >= 0, target < visibleCount else {
                note(command == .down ? "No message below" : "No message above")
                return []
            }
            log.cursor = target
            clampLog()
            return openUnderCursor()
        case .toggleRead:
            let shown = dialog
            let effects = logCommand(.toggleRead)
            dialog = shown
            return effects
        case .delete:
            // The next message takes its place, as in the list; none left, the view closes.
            dialog = nil
            var effects = logCommand(.delete)
            if entryUnderCursor != nil { effects += openUnderCursor() }
            return effects
        case .undo:
            dialog = nil
            return logCommand(.undo)
        default:
            return nil
        }
    }

    /// The message under the log's cursor.
    var entryUnderCursor: InboxEntry? { visibleItems(log.cursor..<(log.cursor + 1)).first }

    /// Marks read the message under the cursor: the cursor went to it.
    mutating func readUnderCursor() -> [Effect] {
        guard screen == .log, let entry = entryUnderCursor, isUnread(entry) else { return [] }
        return changeMarks(.read(ReadMarks([entry.index...entry.index])))
    }

    mutating func clampLog() {
        let count = visibleCount
        log.cursor = max(0, min(log.cursor, count - 1))
        let page = logPageSize
        if log.cursor < log.top { log.top = log.cursor }
        if log.cursor >= log.top + page { log.top = log.cursor - page + 1 }
        log.top = max(0, min(log.top, max(0, count - page)))
        // The days' separators take rows too: the cursor's row stays on the page.
        while log.top < log.cursor, log.cursor >= log.top + LogScreen.fitting(self, from: log.top) { log.top += 1 }
        if log.cursor == (log.order == .newestFirst ? 0 : max(0, count - 1)) { log.newAbove = 0 }
        clampDeletedView()
    }
}
