import BreakingNewsKit
import Foundation

/// The received messages, newest first.
enum LogScreen {
    static func draw(_ state: AppState, _ c: Canvas) {
        let count = state.visibleCount
        let filter = state.log.filter?.name ?? "all categories"
        c.text("  Received", row: ScreenGeometry.contentTop, column: 0, style: Style(bold: true))
        var title = "\(filter) · \(count) message\(count == 1 ? "" : "s")"
        let unread = state.log.filter.map { state.unread[$0.name] ?? 0 } ?? state.unreadTotal
        if unread > 0 { title += " · \(unread) unread" }
        if !state.log.search.isEmpty { title += " · search “\(state.log.search)”" }
        c.text(title, row: ScreenGeometry.contentTop, column: 12, style: Style(color: .muted))
        let top = ScreenGeometry.listTop
        guard count > 0 else {
            c.text(
                "  Nothing received yet. Subscribe on screen 1; messages appear here as they arrive.", row: top, column: 0,
                style: Style(color: .muted))
            return
        }
        let page = state.visibleItems(state.log.top..<(state.log.top + state.logPageSize))
        let time = DisplayTime.TimeColumn(now: state.now)
        for (offset, entry) in page.enumerated() {
            let row = top + offset
            let index = state.log.top + offset
            let selected = index == state.log.cursor
            let match = state.matchesSearch(entry)
            let unread = state.isUnread(entry)
            // The category has its column: the text does not say it again.
            let text = entry.category.map { NewsCatalog.headline(entry.text, category: $0) } ?? entry.text
            let line =
                (unread ? " ● " : "   ") + time.text(entry.receivedAt) + "  "
                + TextWidth.pad(entry.category ?? "—", to: 11) + " " + text
            let style = Style(bold: unread || match, reverse: selected, color: match ? .warning : .normal)
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

/// The keys of the log screen.
extension AppState {
    /// Rows the log list has on screen.
    var geometry: ScreenGeometry { ScreenGeometry(rows: rows, columns: columns) }
    var logPageSize: Int { geometry.logPageSize }

    mutating func logCommand(_ command: Command) -> [Effect] {
        let count = visibleCount
        let cursorBefore = log.cursor
        var effects: [Effect] = []
        switch command {
        case .up: log.cursor -= 1
        case .down: log.cursor += 1
        case .pageUp: log.cursor -= logPageSize
        case .pageDown: log.cursor += logPageSize
        case .top: log.cursor = 0
        case .bottom: log.cursor = count - 1
        case .search:
            log.searching = true
            log.search = ""
            log.searchOrigin = log.cursor
        case .nextMatch: jumpToMatch(from: log.cursor + 1, forward: true)
        case .previousMatch: jumpToMatch(from: log.cursor - 1, forward: false)
        case .cycleFilter:
            let options: [Category?] = [nil] + categories.map(Optional.some)
            let current = options.firstIndex(of: log.filter) ?? 0
            log.filter = options[(current + 1) % options.count]
            log.cursor = 0
            log.top = 0
        case .open:
            if let entry = entryUnderCursor {
                dialog = Dialog(title: "Notification", message: entry.text, isError: false)
                effects += readUnderCursor()
            }
        case .nextUnread:
            // The next unread message below the cursor, wrapping to the top.
            let list = visibleLog
            for step in 1...max(1, list.count) where !list.isEmpty {
                let position = (log.cursor + step) % list.count
                if isUnread(list[position]) {
                    log.cursor = position
                    break
                }
            }
        case .toggleRead:
            if let entry = entryUnderCursor {
                effects += changeReadMarks(isUnread(entry) ? .read(ReadMarks([entry.index...entry.index])) : .unread(entry.index))
            }
            return effects
        case .markShownRead:
            let state = self
            let shown = ReadMarks(items.lazy.filter { state.passesFilter($0) && state.isUnread($0) }.map { $0.index...$0.index })
            if !shown.isEmpty { effects += changeReadMarks(.read(shown)) }
            return effects
        default: break
        }
        clampLog()
        // The cursor went to a message: it is read. A new filter only shows another list; the
        // message it puts the cursor on is not chosen by the user.
        if command != .cycleFilter, log.cursor != cursorBefore || command == .top || command == .bottom {
            effects += readUnderCursor()
        }
        return effects
    }

    /// The message under the log's cursor.
    var entryUnderCursor: InboxEntry? { visibleItems(log.cursor..<(log.cursor + 1)).first }

    /// Marks read the message under the cursor: the cursor went to it.
    mutating func readUnderCursor() -> [Effect] {
        guard screen == .log, let entry = entryUnderCursor, isUnread(entry) else { return [] }
        return changeReadMarks(.read(ReadMarks([entry.index...entry.index])))
    }

    mutating func handleSearch(_ key: Key) -> [Effect] {
        switch key {
        case .character(let c):
            log.search.append(c)
            jumpToMatch(from: log.searchOrigin, forward: true)
        case .backspace:
            if !log.search.isEmpty { log.search.removeLast() }
            jumpToMatch(from: log.searchOrigin, forward: true)
        case .enter:
            // A search kept: the message it ended on is read (not every match typed past).
            log.searching = false
            clampLog()
            return readUnderCursor()
        case .escape:
            log.searching = false
            log.search = ""
            log.cursor = log.searchOrigin
        default: break
        }
        clampLog()
        return []
    }

    /// Moves the cursor to the nearest entry containing the search text (any case),
    /// wrapping around.
    mutating func jumpToMatch(from start: Int, forward: Bool) {
        guard !log.search.isEmpty else { return }
        let list = visibleLog
        guard !list.isEmpty else { return }
        let needle = log.search.lowercased()
        for step in 0..<list.count {
            let i = ((forward ? start + step : start - step) % list.count + list.count) % list.count
            if list[i].text.lowercased().contains(needle) || (list[i].category ?? "").lowercased().contains(needle) {
                log.cursor = i
                return
            }
        }
    }

    /// Whether an entry matches the current search (for highlighting).
    public func matchesSearch(_ entry: InboxEntry) -> Bool {
        !log.search.isEmpty && entry.text.lowercased().contains(log.search.lowercased())
    }

    mutating func clampLog() {
        let count = visibleCount
        log.cursor = max(0, min(log.cursor, count - 1))
        let page = logPageSize
        if log.cursor < log.top { log.top = log.cursor }
        if log.cursor >= log.top + page { log.top = log.cursor - page + 1 }
        log.top = max(0, min(log.top, max(0, count - page)))
    }

}
