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

    /// Where `text` holds `folded` (a folded search); nil when it does not, or when folding
    /// changed how many characters it has, so that the places do not line up.
    static func range(of folded: String, in text: String) -> Range<String.Index>? {
        let foldedText = fold(text)
        guard let found = foldedText.range(of: folded), foldedText.count == text.count else { return nil }
        let lower = foldedText.distance(from: foldedText.startIndex, to: found.lowerBound)
        let length = foldedText.distance(from: found.lowerBound, to: found.upperBound)
        let start = text.index(text.startIndex, offsetBy: lower)
        return start..<text.index(start, offsetBy: length)
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
        _ = jumpToMatch(from: log.searchOrigin, forward: true)
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

    /// Moves the cursor to the nearest entry the search matches from `start` on (or back),
    /// round the end of the list when there is none that way.
    mutating func jumpToMatch(from start: Int, forward: Bool) -> Found {
        log.matchOrdinal = nil
        guard !log.search.isEmpty, log.matches > 0 else { return .none }
        let list = visibleLog
        guard !list.isEmpty else { return .none }
        let needle = SearchText.fold(log.search)
        for step in 0..<list.count {
            let unwrapped = forward ? start + step : start - step
            let i = (unwrapped % list.count + list.count) % list.count
            if SearchText.matches(list[i], folded: needle) {
                log.cursor = i
                log.matchOrdinal = matchOrdinal(at: i)
                return i == unwrapped ? .moved : .wrapped
            }
        }
        return .none
    }

    /// Which match of the search the message at `position` is (from 1); nil when it is none.
    func matchOrdinal(at position: Int) -> Int? {
        guard !log.search.isEmpty else { return nil }
        let needle = SearchText.fold(log.search)
        let before = visibleItems(0..<(position + 1))
        guard let last = before.last, SearchText.matches(last, folded: needle) else { return nil }
        return before.reduce(0) { $0 + (SearchText.matches($1, folded: needle) ? 1 : 0) }
    }

    /// A line of the Show box (`l`, `c`): a limit to switch, or a category to show.
    enum ShowChoice: Sendable, Hashable {
        case unread
        /// The kept search's matches (offered while there is a search, or the limit is set).
        case matches
        /// A category, or every one (nil).
        case category(Category?)
    }

    /// What the Show box offers: the unread and matches limits, then every category, then
    /// each category that has messages (and the one shown, if it has none now).
    func showChoices() -> [ShowChoice] {
        let counts = counts()
        let limits: [ShowChoice] = [.unread] + (log.search.isEmpty && log.matchLimit == nil ? [] : [.matches])
        let shown = categories.filter { (counts[$0.name] ?? 0) > 0 || $0 == log.filter }
        return limits + [.category(nil)] + shown.map { .category($0) }
    }

    /// What the header calls the list's limits: "all categories", "World · unread",
    /// "unread · matching “storm”".
    var limitText: String {
        var parts = [log.filter?.name ?? (log.unreadLimit == nil && log.matchLimit == nil ? "all categories" : nil)]
        if log.unreadLimit != nil { parts.append("unread") }
        if log.matchLimit != nil { parts.append("matching “\(log.matchSearch)”") }
        return parts.compactMap { $0 }.joined(separator: " · ")
    }

    /// The box's lines: the limits checked or not, each category with its count and unread
    /// count, the one shown marked.
    func filterLines() -> [String] {
        let counts = counts()
        let choices = showChoices()
        let names = choices.map { choice -> String in
            switch choice {
            case .unread: return "[\(log.unreadLimit == nil ? " " : "x")] Unread only"
            case .matches:
                let search = log.matchLimit == nil ? log.search : log.matchSearch
                return "[\(log.matchLimit == nil ? " " : "x")] Matches of “\(search)”"
            case .category(let category):
                return "(\(category == log.filter ? "•" : " ")) \(category?.name ?? "All categories")"
            }
        }
        let width = names.map(TextWidth.of).max() ?? 0
        return zip(choices, names).enumerated().map { i, pair in
            let (choice, name) = pair
            let mark = i == log.picker ? "▸ " : "  "
            guard case .category(let category) = choice else { return mark + name }
            let total = category.map { counts[$0.name] ?? 0 } ?? items.count
            let unread = category.map { self.unread[$0.name] ?? 0 } ?? unreadTotal
            return mark + TextWidth.pad(name, to: width) + "  " + "\(total)" + (unread > 0 ? " · \(unread) unread" : "")
        }
    }

    /// The Show box's keys. Space or Enter on a limit switches it (Space keeps the box open);
    /// on a category, shows it. Esc, `l`, `c` or `q` closes the box.
    mutating func handlePicker(_ key: Key) -> [Effect] {
        let choices = showChoices()
        let current = min(log.picker ?? 0, choices.count - 1)
        switch key {
        case .up, .character("k"): log.picker = max(0, current - 1)
        case .down, .character("j"): log.picker = min(choices.count - 1, current + 1)
        case .home, .character("g"): log.picker = 0
        case .end, .character("G"): log.picker = choices.count - 1
        case .enter, .character(" "):
            guard choices.indices.contains(current) else { return [] }
            switch choices[current] {
            case .unread:
                log.unreadLimit = log.unreadLimit == nil ? Set(items.filter { isUnread($0) }.map(\.index)) : nil
                if key == .enter { log.picker = nil }
            case .matches:
                log.matchLimit = log.matchLimit == nil ? SearchText.fold(log.search) : nil
                log.matchSearch = log.search
                if key == .enter { log.picker = nil }
            case .category(let category):
                log.picker = nil
                guard category != log.filter else { return [] }
                log.filter = category
            }
            log.cursor = 0
            log.top = 0
            log.newAbove = 0
            recountMatches()
            clampLog()
        case .escape, .character("c"), .character("l"), .character("q"):
            log.picker = nil
        default:
            break
        }
        return []
    }
}
