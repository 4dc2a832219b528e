import BreakingNewsKit
import Foundation

/// Matching as people search: any case, any accent (`election` finds `Élection`).
enum SearchText {
    /// `text` folded for matching; plain ASCII only lower-cased, which is all it needs.
    static func fold(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text.lowercased() }
        return text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
    }

    /// Whether `entry`'s text or category holds `folded` (a folded search).
    static func matches(_ entry: InboxEntry, folded: String) -> Bool {
        fold(entry.text).contains(folded) || fold(entry.category ?? "").contains(folded)
    }
}

/// The log's search (`/`) and category picker (`c`).
extension AppState {
    mutating func handleSearch(_ key: Key) -> [Effect] {
        switch key {
        case .character(let c):
            log.search.append(c)
        case .paste(let text):
            log.search += TextWidth.printable(text)
        case .backspace:
            if !log.search.isEmpty { log.search.removeLast() }
        case .enter:
            // A search kept: the message it ended on is read (not every match typed past).
            log.searching = false
            clampLog()
            return readUnderCursor()
        case .escape:
            log.searching = false
            log.search = ""
            log.matches = 0
            log.cursor = log.searchOrigin
            clampLog()
            return []
        default:
            return []
        }
        recountMatches()
        jumpToMatch(from: log.searchOrigin, forward: true)
        clampLog()
        return []
    }

    /// Counts the messages of the list the search matches.
    mutating func recountMatches() {
        guard !log.search.isEmpty else {
            log.matches = 0
            return
        }
        let needle = SearchText.fold(log.search)
        let state = self
        log.matches = items.reduce(0) { $0 + (state.passesFilter($1) && SearchText.matches($1, folded: needle) ? 1 : 0) }
    }

    /// Moves the cursor to the nearest entry the search matches, wrapping around; false
    /// when none does.
    @discardableResult
    mutating func jumpToMatch(from start: Int, forward: Bool) -> Bool {
        guard !log.search.isEmpty, log.matches > 0 else { return false }
        let list = visibleLog
        guard !list.isEmpty else { return false }
        let needle = SearchText.fold(log.search)
        for step in 0..<list.count {
            let i = ((forward ? start + step : start - step) % list.count + list.count) % list.count
            if SearchText.matches(list[i], folded: needle) {
                log.cursor = i
                return true
            }
        }
        return false
    }

    /// What the picker offers: every category (nil), then each category that has messages
    /// (and the one shown, if it has none now).
    func filterChoices() -> [Category?] {
        let counts = counts()
        return [nil] + categories.filter { (counts[$0.name] ?? 0) > 0 || $0 == log.filter }.map(Optional.some)
    }

    /// The picker's lines: each choice with its count and unread count.
    func filterLines() -> [String] {
        let counts = counts()
        let choices = filterChoices()
        let names = choices.map { $0?.name ?? "All categories" }
        let width = names.map(TextWidth.of).max() ?? 0
        return zip(choices, names).enumerated().map { i, pair in
            let (choice, name) = pair
            let total = choice.map { counts[$0.name] ?? 0 } ?? items.count
            let unread = choice.map { self.unread[$0.name] ?? 0 } ?? unreadTotal
            let mark = i == log.picker ? "▸ " : "  "
            return mark + TextWidth.pad(name, to: width) + "  " + "\(total)" + (unread > 0 ? " · \(unread) unread" : "")
        }
    }

    mutating func handlePicker(_ key: Key) -> [Effect] {
        let choices = filterChoices()
        let current = log.picker ?? 0
        switch key {
        case .up, .character("k"): log.picker = max(0, current - 1)
        case .down, .character("j"): log.picker = min(choices.count - 1, current + 1)
        case .home, .character("g"): log.picker = 0
        case .end, .character("G"): log.picker = choices.count - 1
        case .enter, .character(" "):
            log.picker = nil
            guard choices.indices.contains(current), choices[current] != log.filter else { return [] }
            log.filter = choices[current]
            log.cursor = 0
            log.top = 0
            log.newAbove = 0
            recountMatches()
        case .escape, .character("c"), .character("q"):
            log.picker = nil
        default:
            break
        }
        return []
    }
}
