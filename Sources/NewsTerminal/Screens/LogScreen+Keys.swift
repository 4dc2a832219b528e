import BreakingNewsKit
import Foundation

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
