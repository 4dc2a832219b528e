import BreakingNewsKit

/// The deleted view of the log (`D`): the home's deleted messages, whichever window deleted
/// them, newest first, until the kept days prune them; `u` or Enter restores the one under the
/// cursor in every window of the home, `D` or Esc goes back to the list.
extension LogScreen {
    static func drawDeleted(_ state: AppState, _ view: AppState.DeletedView, _ c: Canvas) {
        let list = state.deletedList
        c.text("  Deleted", row: ScreenGeometry.contentTop, column: 0, style: Style(bold: true, color: .warning))
        let count = list.count == 1 ? "1 deleted message" : "\(list.count) deleted messages"
        var title = "\(count), newest first"
        let restore = state.deletedViewKeys(.toggleRead, .open)
        if !restore.isEmpty, !list.isEmpty { title += " · \(restore) restores" }
        let leave = state.deletedViewKeys(.deletedView, .cancel)
        if !leave.isEmpty { title += " · \(leave) back to the log" }
        c.text(title, row: ScreenGeometry.contentTop, column: 12, style: Style(color: .muted))
        let top = ScreenGeometry.listTop
        guard !list.isEmpty else {
            c.text(
                "  No deleted messages: a message deleted in any window of this home is listed here.", row: top, column: 0,
                style: Style(color: .muted))
            return
        }
        let time = DisplayTime.TimeColumn(now: state.now)
        let page = list.dropFirst(view.top).prefix(state.logPageSize)
        for (offset, entry) in page.enumerated() {
            let text = TextWidth.printable(entry.category.map { NewsCatalog.headline(entry.text, category: $0) } ?? entry.text)
            let line = "   " + time.text(entry.sentAt) + "  " + TextWidth.pad(entry.category ?? "—", to: 11) + " " + text
            let style = Style(reverse: view.top + offset == view.cursor)
            c.text(TextWidth.pad(line, to: c.columns), row: top + offset, column: 0, style: style)
        }
        if list.count > state.logPageSize {
            let position = "\(view.cursor + 1)/\(list.count)"
            c.text(
                position, row: state.geometry.positionRow, column: c.columns - TextWidth.of(position) - 1,
                style: Style(color: .muted))
        }
    }

    /// The footer of the deleted view.
    static func deletedFooter(_ state: AppState) -> [(String, String)] {
        let keys = state.keyMap
        return [
            (keys.label(of: .up), "up"), (keys.label(of: .down), "down"), (state.deletedViewKeys(.toggleRead, .open), "restore"),
            (state.deletedViewKeys(.deletedView, .cancel), "back to the log"), (keys.label(of: .undo, on: .log), "undo"),
            (keys.label(of: .help), "help"), (keys.label(of: .quit), "quit"),
        ]
    }
}

extension AppState {
    /// The home's deleted messages this window knows, newest first (pruned ones are gone).
    var deletedList: [InboxEntry] { deletedItems.values.sorted { $0.index > $1.index } }

    /// The keys of `commands` on the log, as the header and footer write them ("u or Enter").
    func deletedViewKeys(_ commands: Command...) -> String {
        commands.map { keyMap.label(of: $0, on: .log) }.filter { !$0.isEmpty }.joined(separator: " or ")
    }

    /// The keys of the deleted view: the list keys move in it, `u` and Enter restore, `D` and
    /// Esc leave it, `z` undoes; the log's other keys say what the view is.
    mutating func deletedViewCommand(_ command: Command) -> [Effect] {
        guard var view = log.deletedView else { return [] }
        let count = deletedList.count
        switch command {
        case .up, .down, .pageUp, .pageDown, .top, .bottom:
            view.cursor = moved(view.cursor, by: command, count: count)
        case .deletedView, .cancel:
            // A note about the view goes with it.
            log.deletedView = nil
            toast = nil
            return []
        case .toggleRead, .open:
            return restoreUnderCursor()
        case .undo:
            return undoLast()
        default:
            let restore = count == 0 ? "" : deletedViewKeys(.toggleRead, .open)
            let leave = deletedViewKeys(.deletedView, .cancel)
            note(
                "The deleted view: " + (restore.isEmpty ? "" : "\(restore) restores, ")
                    + (leave.isEmpty ? "the log's keys wait" : "\(leave) goes back to the log"))
            return []
        }
        log.deletedView = view
        clampDeletedView()
        return []
    }

    /// Restores the deleted message under the deleted view's cursor, in every window of the
    /// home; the cursor stays on its row, now the next one.
    private mutating func restoreUnderCursor() -> [Effect] {
        guard let view = log.deletedView, let entry = deletedList[safe: view.cursor] else {
            note("No deleted message to restore")
            return []
        }
        note("Restored “\(LogScreen.shortHeadline(entry))” in every window")
        let effects = changeMarks(.restore(ReadMarks([entry.index...entry.index])))
        recountMatches()
        return effects
    }

    /// Keeps the deleted view's cursor on its list and on screen, as the list changes.
    mutating func clampDeletedView() {
        guard var view = log.deletedView else { return }
        let count = deletedItems.count
        let page = logPageSize
        view.cursor = max(0, min(view.cursor, count - 1))
        if view.cursor < view.top { view.top = view.cursor }
        if view.cursor >= view.top + page { view.top = view.cursor - page + 1 }
        view.top = max(0, min(view.top, max(0, count - page)))
        log.deletedView = view
    }
}
