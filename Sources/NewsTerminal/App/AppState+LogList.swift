import BreakingNewsKit
import Foundation

/// The log screen's list: the received messages in the order shown, under its limits.
extension AppState {
    /// Whether the log screen's list is limited (a category, the unread, the matches).
    var isLimited: Bool { log.filter != nil || log.unreadLimit != nil || log.matchLimit != nil }

    /// Whether `entry` passes the log screen's limits.
    func passesFilter(_ entry: InboxEntry) -> Bool {
        if let filter = log.filter, entry.category != filter.name { return false }
        if let unread = log.unreadLimit, !unread.contains(entry.index) { return false }
        if let needle = log.matchLimit, !SearchText.matches(entry, folded: needle) { return false }
        return true
    }

    /// The log screen's list: in `log.order`, filtered by category.
    public var visibleLog: [InboxEntry] { visibleItems(0..<visibleCount) }

    /// The entry at `position` of the unfiltered list, in `log.order`.
    private func shownEntry(_ position: Int) -> InboxEntry {
        items[bySent[log.order == .newestFirst ? bySent.count - 1 - position : position]]
    }

    /// The position in the log screen's list of the message at log position `index`; nil
    /// when the list does not show it.
    func shownPosition(of index: Int) -> Int? {
        var position = 0
        for shown in 0..<bySent.count {
            let entry = shownEntry(shown)
            guard passesFilter(entry) else { continue }
            if entry.index == index { return position }
            position += 1
        }
        return nil
    }

    /// The position of the newest message in the log screen's list.
    var newestPosition: Int { log.order == .newestFirst ? 0 : max(0, visibleCount - 1) }

    /// How many messages the log screen lists.
    public var visibleCount: Int {
        guard isLimited else { return items.count }
        return items.reduce(0) { $0 + (passesFilter($1) ? 1 : 0) }
    }

    /// Positions `range` of the log screen's list, without building the whole list: a
    /// redraw costs the rows on screen, not the size of the log.
    public func visibleItems(_ range: Range<Int>) -> [InboxEntry] {
        guard isLimited else {
            let upper = min(range.upperBound, items.count)
            guard range.lowerBound < upper else { return [] }
            return (range.lowerBound..<upper).map(shownEntry)
        }
        var result: [InboxEntry] = []
        var position = 0
        for shown in 0..<bySent.count {
            let entry = shownEntry(shown)
            guard passesFilter(entry) else { continue }
            if position >= range.upperBound { break }
            if position >= range.lowerBound { result.append(entry) }
            position += 1
        }
        return result
    }
}
