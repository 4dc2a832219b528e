import BreakingNewsKit
import Foundation

/// The three screens.
public enum ScreenID: Int, Sendable, Hashable, CaseIterable {
    case categories, compose, log

    public var title: String {
        switch self {
        case .categories: return "Categories"
        case .compose: return "Compose"
        case .log: return "Log"
        }
    }
}

/// One category's outcome on the compose screen.
public struct SendResultRow: Sendable, Hashable {
    public var category: Category
    public var succeeded: Bool
    public var detail: String
    /// The accepted send's id: Enter on the row explains it.
    public var notificationId: String? = nil
}

/// A modal box: the tutorial's alerts ("Subscribed", "Notification").
public struct Dialog: Sendable, Hashable {
    public var title: String
    public var message: String
    public var isError: Bool
    /// For a question: what Enter (or y) does; Esc (or n) cancels.
    public var confirm: Effect?
}

/// A passing note at the top of the screen.
public struct Toast: Sendable, Hashable {
    public var text: String
    public var expires: Date
    /// Messages this toast stands for: a burst is counted, not hidden behind its last.
    public var count = 1
}

/// Everything the screen shows; changed only by `reduce`.
public struct AppState: Sendable, Hashable {
    public enum ComposeFocus: Sendable, Hashable {
        case text
        case category(Int)
        case send
        /// A send's result row, to explain it.
        case result(Int)
    }

    public struct Compose: Sendable, Hashable {
        public var text: [Character] = []
        public var cursor = 0
        public var focus: ComposeFocus = .text
        public var checked: [Bool]
        public var results: [SendResultRow] = []
        public var sending = false
        /// The text of the send under way: what a successful send takes out of the field,
        /// leaving anything typed meanwhile.
        public var inFlight: [Character] = []
        public var error: String?
    }

    public struct Log: Sendable, Hashable {
        /// Position in the visible list (newest first).
        public var cursor = 0
        /// First visible row.
        public var top = 0
        public var filter: Category?
        public var search = ""
        public var searching = false
        var searchOrigin = 0
    }

    public var screen: ScreenID = .categories
    public var categories: [Category]
    /// The switches as shown (stored only on Subscribe).
    public var switches: Set<Category>
    /// The selection last stored.
    public var storedSelection: Set<Category>
    /// 0..<categories.count are the switches; categories.count is the Subscribe button.
    public var categoryCursor = 0
    public var registration: RegistrationRecord?
    public var registering = false
    public var hub: String?
    public var connection: ConnectionStatus = .connecting
    public var reconnectAt: Date?
    /// Everything received, oldest first (the received log's entries); grows by `receive`.
    public private(set) var items: [InboxEntry] = []
    /// The messages read (log positions), as this window shows them: changed here at once,
    /// and by other windows through the shared marks on disk.
    public private(set) var readMarks = ReadMarks()
    /// This window's changes to the marks not yet known to be on disk, oldest first, and how
    /// many are (every change is counted: the runtime reports how many it has applied).
    private(set) var unconfirmedReadChanges: [ReadChange] = []
    private(set) var readChangesConfirmed = 0
    /// Unread messages per category name ("" for none), kept as items arrive and marks move:
    /// every frame shows the counts, and a frame must not cost the size of the log.
    public private(set) var unread: [String: Int] = [:]
    public var compose: Compose
    public var log = Log()
    public var toast: Toast?
    public var dialog: Dialog?
    public var showHelp = false
    /// The first line shown of the dialog or help, when they are longer than the screen.
    public var overlayTop = 0
    /// The bell and desktop notification on arrival (`b`, `d`), as stored for the home.
    public var alerts: ArrivalAlerts = .off
    /// How many times the user switched an alert in this window (each one stored in turn).
    var alertSwitches = 0
    var alertPacing = AlertPacing()
    public var rows: Int
    public var columns: Int
    public var now: Date
    public var quitting = false

    public init(
        categories: [Category], selection: [Category], registration: RegistrationRecord?, items: [InboxEntry],
        readMarks: ReadMarks = ReadMarks(), rows: Int, columns: Int, now: Date = Date(), warning: String? = nil,
        draft: String = ""
    ) {
        self.categories = categories
        self.switches = Set(selection)
        self.storedSelection = Set(selection)
        self.registration = registration
        self.readMarks = readMarks
        // Nothing is checked until the user checks it: a send goes where they chose.
        self.compose = Compose(checked: Array(repeating: false, count: categories.count))
        compose.text = Array(draft)
        compose.cursor = compose.text.count
        self.rows = rows
        self.columns = columns
        self.now = now
        receive(items)
        if let warning { dialog = Dialog(title: "A file could not be read", message: warning, isError: true) }
    }

    /// Whether the window shows `entry` as unread.
    public func isUnread(_ entry: InboxEntry) -> Bool { !readMarks.contains(entry.index) }

    public var unreadTotal: Int { unread.values.reduce(0, +) }

    /// Adds entries that arrived (the log's next ones, oldest first).
    mutating func receive(_ entries: [InboxEntry]) {
        items += entries
        for entry in entries where isUnread(entry) { unread[entry.category ?? "", default: 0] += 1 }
    }

    /// Takes the marks as they are on disk (moved by another window or a command), with
    /// this window's changes that were not on disk yet when they were read applied on top:
    /// a snapshot read just before this window's newest change is written cannot undo it.
    mutating func adoptReadMarks(_ marks: ReadMarks, changesApplied: Int) {
        let confirmed = max(0, min(changesApplied - readChangesConfirmed, unconfirmedReadChanges.count))
        unconfirmedReadChanges.removeFirst(confirmed)
        readChangesConfirmed += confirmed
        var merged = marks
        for change in unconfirmedReadChanges {
            switch change {
            case .read(let read): merged.formUnion(read)
            case .unread(let position): merged.remove(position)
            }
        }
        guard merged != readMarks else { return }
        readMarks = merged
        recountUnread()
    }

    /// Changes the marks here at once and asks for the change on disk, where the home's
    /// other windows see it.
    mutating func changeReadMarks(_ change: ReadChange) -> [Effect] {
        switch change {
        case .read(let marks):
            guard marks.count <= 64 else {
                readMarks.formUnion(marks)
                recountUnread()
                break
            }
            for range in marks.ranges {
                for position in range where !readMarks.contains(position) {
                    readMarks.insert(position)
                    if let entry = item(at: position) { unread[entry.category ?? "", default: 0] -= 1 }
                }
            }
            unread = unread.filter { $0.value > 0 }
        case .unread(let position):
            guard readMarks.contains(position) else { return [] }
            readMarks.remove(position)
            if let entry = item(at: position) { unread[entry.category ?? "", default: 0] += 1 }
        }
        unconfirmedReadChanges.append(change)
        return [.changeReadMarks(change)]
    }

    private mutating func recountUnread() {
        unread = [:]
        for entry in items where isUnread(entry) { unread[entry.category ?? "", default: 0] += 1 }
    }

    /// The entry at log position `position`: items are the log's entries in order, so it is
    /// found by its position unless the window was given a part of the log.
    private func item(at position: Int) -> InboxEntry? {
        if let entry = items[safe: position - 1], entry.index == position { return entry }
        return items.first { $0.index == position }
    }

    /// Whether `entry` passes the log screen's category filter.
    func passesFilter(_ entry: InboxEntry) -> Bool { log.filter.map { entry.category == $0.name } ?? true }

    /// The log screen's list: newest first, filtered by category.
    public var visibleLog: [InboxEntry] { visibleItems(0..<visibleCount) }

    /// How many messages the log screen lists.
    public var visibleCount: Int {
        guard log.filter != nil else { return items.count }
        return items.reduce(0) { $0 + (passesFilter($1) ? 1 : 0) }
    }

    /// Positions `range` of the log screen's list, without building the whole list: a
    /// redraw costs the rows on screen, not the size of the log.
    public func visibleItems(_ range: Range<Int>) -> [InboxEntry] {
        guard log.filter != nil else {
            let upper = min(range.upperBound, items.count)
            guard range.lowerBound < upper else { return [] }
            return (range.lowerBound..<upper).map { items[items.count - 1 - $0] }
        }
        var result: [InboxEntry] = []
        var position = 0
        for index in items.indices.reversed() where passesFilter(items[index]) {
            if position >= range.upperBound { break }
            if position >= range.lowerBound { result.append(items[index]) }
            position += 1
        }
        return result
    }

    /// Whether the text field has the keys.
    public var isEditingText: Bool { screen == .compose && compose.focus == .text && dialog == nil && !showHelp }
}
