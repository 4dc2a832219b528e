import BreakingNewsKit
import Foundation

/// The received messages, newest first.
enum LogScreen {
    static func draw(_ state: AppState, _ c: Canvas) {
        if let view = state.log.deletedView { return drawDeleted(state, view, c) }
        let count = state.visibleCount
        let filter = state.log.filter?.name ?? "all categories"
        c.text("  Received", row: ScreenGeometry.contentTop, column: 0, style: Style(bold: true))
        var title = "\(filter) · \(count) message\(count == 1 ? "" : "s")"
        let unread = state.log.filter.map { state.unread[$0.name] ?? 0 } ?? state.unreadTotal
        if unread > 0 { title += " · \(unread) unread" }
        if !state.log.search.isEmpty { title += " · search “\(state.log.search)” · \(matchesText(state.log.matches))" }
        c.text(title, row: ScreenGeometry.contentTop, column: 12, style: Style(color: .muted))
        // New messages above what is on screen, while the cursor is not following the newest.
        let above = min(state.log.newAbove, state.log.top)
        if above > 0 {
            c.text(
                "  ↑ \(above) new above · g newest", row: ScreenGeometry.listTop - 1, column: 0,
                style: Style(bold: true, color: .accent))
        }
        let top = ScreenGeometry.listTop
        guard count > 0 else {
            let empty =
                state.log.filter == nil
                ? "  Nothing received yet. Subscribe on screen 1; messages appear here as they arrive."
                : "  No \(filter) messages. Esc shows every message."
            c.text(empty, row: top, column: 0, style: Style(color: .muted))
            return
        }
        let page = state.visibleItems(state.log.top..<(state.log.top + state.logPageSize))
        let time = DisplayTime.TimeColumn(now: state.now)
        let needle = SearchText.fold(state.log.search)
        for (offset, entry) in page.enumerated() {
            let row = top + offset
            let index = state.log.top + offset
            let selected = index == state.log.cursor
            let match = !needle.isEmpty && SearchText.matches(entry, folded: needle)
            let unread = state.isUnread(entry)
            // The category has its column: the text does not say it again. One line: its line
            // breaks are spaces before it is measured, so nothing is cut that fits.
            let text = TextWidth.printable(entry.category.map { NewsCatalog.headline(entry.text, category: $0) } ?? entry.text)
            let line =
                (unread ? " ● " : "   ") + time.text(entry.sentAt) + "  " + TextWidth.pad(entry.category ?? "—", to: 11) + " "
                + text
            let style = Style(bold: unread || match, reverse: selected, color: match ? .warning : .normal)
            // Received more than a minute after it was sent: when it came, at the row's end,
            // when the row has room for the text beside it.
            let received = entry.receivedLate ? " received " + DisplayTime.short(entry.receivedAt, now: state.now) + " " : ""
            let width = TextWidth.of(received)
            if width > 0, c.columns - width >= 50 {
                c.text(TextWidth.pad(line, to: c.columns - width), row: row, column: 0, style: style)
                c.text(received, row: row, column: c.columns - width, style: Style(reverse: selected, color: .muted))
            } else {
                c.text(TextWidth.pad(line, to: c.columns), row: row, column: 0, style: style)
            }
        }
        if count > state.logPageSize {
            let position = "\(state.log.cursor + 1)/\(count)"
            c.text(
                position, row: state.geometry.positionRow, column: c.columns - TextWidth.of(position) - 1,
                style: Style(color: .muted))
        }
    }

    static func matchesText(_ count: Int) -> String {
        count == 0 ? "no match" : count == 1 ? "1 match" : "\(count) matches"
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
        switch command {
        case .up, .down, .pageUp, .pageDown, .top, .bottom:
            log.cursor = moved(log.cursor, by: command, count: count)
        case .search:
            log.searching = true
            log.search = ""
            log.matches = 0
            log.searchOrigin = log.cursor
        case .nextMatch, .previousMatch:
            if log.search.isEmpty {
                note("No search: / searches")
            } else if !jumpToMatch(from: log.cursor + (command == .nextMatch ? 1 : -1), forward: command == .nextMatch) {
                note("No match for “\(log.search)”")
            }
        case .chooseFilter:
            log.picker = filterChoices().firstIndex { $0 == log.filter } ?? 0
            return []
        case .cancel:
            // Back to every message: no filter, no search.
            guard log.filter != nil || !log.search.isEmpty else { return [] }
            log.filter = nil
            log.search = ""
            log.matches = 0
            log.cursor = 0
            log.top = 0
            log.newAbove = 0
            return []
        case .open:
            if let entry = entryUnderCursor {
                dialog = Dialog(title: "Notification", message: entry.text, isError: false, entry: entry)
                effects += readUnderCursor()
            }
        case .openLink, .copy, .pipe:
            guard let entry = entryUnderCursor else { return [] }
            return act(command, on: entry)
        case .nextUnread:
            if !moveToNextUnread() {
                note(log.filter.map { "No unread \($0.name) messages" } ?? "No unread messages")
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

    /// Moves the cursor to the next unread message below it, wrapping to the top; false when
    /// none is unread.
    private mutating func moveToNextUnread() -> Bool {
        let list = visibleLog
        for step in 1...max(1, list.count) where !list.isEmpty {
            let position = (log.cursor + step) % list.count
            if isUnread(list[position]) {
                log.cursor = position
                return true
            }
        }
        return false
    }

    /// Keeps the list as the user reads it when messages arrive: with the cursor on the
    /// newest, it stays on the newest (as `tail -f` does); elsewhere what is on screen stays
    /// put and a marker counts what came above. Either way what arrived stays unread until
    /// the cursor goes to it.
    mutating func followArrivals(_ entries: [InboxEntry]) {
        let state = self
        let shown = entries.filter { state.passesFilter($0) && !state.marks.deleted.contains($0.index) }.count
        guard shown > 0 else { return }
        if !log.search.isEmpty { recountMatches() }
        if log.cursor == 0, !log.searching {
            clampLog()
            return
        }
        log.cursor += shown
        log.top += shown
        log.searchOrigin += shown
        log.newAbove += shown
        clampLog()
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
        if log.cursor == 0 { log.newAbove = 0 }
        clampDeletedView()
    }
}
