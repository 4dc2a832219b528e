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
    /// What the row says (a sent id, or the error on one line; cut at the screen's edge).
    public var detail: String
    /// The accepted send's id: Enter on the row explains it.
    public var notificationId: String? = nil
    /// For a failure: the whole error and what to do about it, which Enter on the row shows.
    public var problem: String? = nil
}

/// A modal box: a message to read, or a question.
public struct Dialog: Sendable, Hashable {
    public var title: String
    public var message: String
    public var isError: Bool
    /// For a question: what Enter does; Esc, n or any other typed key cancels.
    public var confirm: Effect?
    /// What the question's yes is called ("send", "quit").
    public var confirmLabel = "send"
    /// For a question about a command of the screen (`A` on many messages): what Enter runs.
    public var confirmCommand: Command? = nil
    /// The message view: the message this box shows whole, with its time, category and id
    /// (`o`, `y` and `|` act on it).
    public var entry: InboxEntry? = nil

    /// Whether it asks (Enter: yes; Esc, n or any other typed key: no).
    public var isQuestion: Bool { confirm != nil || confirmCommand != nil }
}

/// The small list `o` and `y` open when there is a choice: which link to open, or the
/// message or which link to copy.
public struct LinkChooser: Sendable, Hashable {
    public enum Purpose: Sendable, Hashable { case open, copy }
    public var purpose: Purpose
    /// What each line stands for: a link, or (copy) the whole message.
    public var choices: [String]
    public var labels: [String]
    public var selected = 0
}

/// The command line `|` asks for: the message goes to the command's standard input.
public struct PipePrompt: Sendable, Hashable {
    /// What is piped.
    public var text: String
    public var command: String
}

/// The order the Log lists messages in, by the time each was sent.
public enum LogOrder: String, Sendable, Hashable {
    case newestFirst = "newest"
    case oldestFirst = "oldest"
}

/// A passing note at the top of the screen.
public struct Toast: Sendable, Hashable {
    public var text: String
    public var expires: Date
    /// Messages this toast stands for: a burst is counted, not hidden behind its last.
    public var count = 1
    /// A notice that stays in front of the messages arriving while it shows.
    public var notice: String?
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

    public struct Log: Sendable, Hashable {
        /// Position in the visible list (in `order`).
        public var cursor = 0
        /// First visible row.
        public var top = 0
        public var filter: Category?
        public var search = ""
        public var searching = false
        var searchOrigin = 0
        /// How many messages the search matches in the list (kept as the search changes).
        public var matches = 0
        /// Which of them the cursor is on (from 1), while it stays on the one it went to.
        public var matchOrdinal: Int?
        /// The Show box (`l`, `c`), open at this line (`showChoices`).
        public var picker: Int?
        /// The unread limit: the messages unread when it was set, and those that arrived
        /// unread since. One read meanwhile stays until the limit is set again, so that going
        /// to a message does not take it from under the cursor.
        public var unreadLimit: Set<Int>?
        /// The matches limit: only the messages this search (folded) matches.
        public var matchLimit: String?
        /// The search the matches limit was set with, as typed.
        public var matchSearch = ""
        /// Messages that arrived on the newest side of the cursor (above it newest first,
        /// below it oldest first) while it was not on the newest.
        public var newAbove = 0
        /// Newest or oldest first, by the time each message was sent (`O`).
        public var order: LogOrder = .newestFirst
        /// The deleted view (`D`), open: the home's deleted messages in place of the list.
        public var deletedView: DeletedView?
    }

    /// The deleted view's place in its list (newest first).
    public struct DeletedView: Sendable, Hashable {
        public var cursor = 0
        public var top = 0
    }

    /// One action of this window that `z` undoes: the messages it changed (log positions).
    public enum Undo: Sendable, Hashable {
        /// `A`: the messages it marked read.
        case markedRead(ReadMarks)
        /// `x`: the message it deleted, and what the toast calls it.
        case deleted(ReadMarks, headline: String)
    }

    /// How many actions `z` can undo: the oldest beyond are forgotten.
    public static let undoLimit = 1_000

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
    /// `r` asked for the stopped local hub to be started: the header says so until it answers.
    public var startingHub = false
    /// Who this window receives as (another process, or a home restored from a copy, may
    /// change it on disk).
    public var identity: DeviceIdentity?
    /// Everything received and not deleted, in log order (the received log's entries); grows
    /// by `receive`.
    public private(set) var items: [InboxEntry] = []
    /// The offsets of `items` by the time each was sent, oldest first (log order between
    /// messages sent at the same time): the order the Log lists them in.
    private(set) var bySent: [Int] = []
    /// How many of `items` are notices that messages expired, not messages.
    public private(set) var notices = 0
    /// Deleted messages, by log position: out of the list, kept for an undo and the deleted
    /// view; a pruned one (only its stub is left) is not kept.
    private(set) var deletedItems: [Int: InboxEntry] = [:]
    /// The messages read and deleted (log positions), as this window shows them: changed here
    /// at once, and by other windows through the shared marks on disk.
    public private(set) var marks = InboxMarks()
    /// What `z` undoes, newest last: this window's deletes and `A`s for as long as it is open
    /// (the last `undoLimit` of them).
    public internal(set) var undos: [Undo] = []
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
    /// The choice of a link (`o`, `y`), over whatever is on screen.
    public var chooser: LinkChooser?
    /// The command `|` is asking for, typed in the footer.
    public var pipePrompt: PipePrompt?
    /// The last command a message was piped to, offered again.
    public var lastPipeCommand = ""
    /// The keys, the standard ones or as `config.json` binds them.
    public var keyMap = KeyMap.standard
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
    /// `"confirmQuit": true` in config.json: q asks before it quits.
    public var confirmQuit = false

    public init(
        categories: [Category], selection: [Category], registration: RegistrationRecord?, items: [InboxEntry],
        readMarks: ReadMarks = ReadMarks(), deleted: ReadMarks = ReadMarks(), rows: Int, columns: Int, now: Date = Date(),
        warning: String? = nil, draft: String = "", sent: [SentMessage] = []
    ) {
        self.categories = categories
        self.switches = Set(selection)
        self.storedSelection = Set(selection)
        self.registration = registration
        self.marks = InboxMarks(read: readMarks, deleted: deleted)
        self.compose = Compose(categories: categories, draft: draft, sent: sent)
        self.rows = rows
        self.columns = columns
        self.now = now
        compose.fieldTop = composeField.top(from: 0, height: geometry.composeFieldRows)
        receive(items)
        if let warning { dialog = Dialog(title: "A file could not be read", message: warning, isError: true) }
    }

    /// The messages read (log positions).
    public var readMarks: ReadMarks { marks.read }

    /// Whether the window shows `entry` as unread: a notice that messages expired is never
    /// a message to read.
    public func isUnread(_ entry: InboxEntry) -> Bool { entry.gap == nil && !marks.read.contains(entry.index) }

    public var unreadTotal: Int { unread.values.reduce(0, +) }

    /// Adds entries that arrived (the log's next ones, oldest first).
    mutating func receive(_ entries: [InboxEntry]) {
        for entry in entries {
            if marks.deleted.contains(entry.index) {
                if !entry.pruned { deletedItems[entry.index] = entry }
                continue
            }
            // A notice that messages expired stands where they were: just before the first
            // message that came after it (it was written when the terminal came back).
            if entry.gap == nil, let notice = items.indices.last, items[notice].gap != nil,
                items[notice].sentSeconds > entry.sentSeconds
            {
                bySent.removeAll { $0 == notice }
                items[notice].sentAt = entry.sentAt
                placeBySent(notice)
            }
            items.append(entry)
            if entry.gap != nil { notices += 1 }
            if isUnread(entry) { log.unreadLimit?.insert(entry.index) }
            placeBySent(items.count - 1)
            if isUnread(entry) { unread[entry.category ?? "", default: 0] += 1 }
        }
    }

    /// Puts `items[offset]` in its place in `bySent`: nearly always the newest, so the place
    /// is looked for from the end.
    private mutating func placeBySent(_ offset: Int) {
        var place = bySent.count
        while place > 0, Self.sentBefore(items[offset], items[bySent[place - 1]]) { place -= 1 }
        bySent.insert(offset, at: place)
    }

    /// Whether the Log lists `a` before `b`, oldest first.
    static func sentBefore(_ a: InboxEntry, _ b: InboxEntry) -> Bool {
        a.sentSeconds < b.sentSeconds || (a.sentSeconds == b.sentSeconds && a.index < b.index)
    }

    /// Sorts `bySent` anew, once `items` changed other than at its end.
    private mutating func resortBySent() {
        let items = self.items
        notices = items.reduce(0) { $0 + ($1.gap == nil ? 0 : 1) }
        bySent = items.indices.sorted { Self.sentBefore(items[$0], items[$1]) }
    }

    /// Takes the marks as they are on disk (moved by another window or a command), with
    /// this window's changes that were not on disk yet when they were read applied on top:
    /// a snapshot read just before this window's newest change is written cannot undo it.
    mutating func adoptMarks(_ disk: InboxMarks, changesApplied: Int) {
        let confirmed = max(0, min(changesApplied - readChangesConfirmed, unconfirmedReadChanges.count))
        unconfirmedReadChanges.removeFirst(confirmed)
        readChangesConfirmed += confirmed
        var merged = disk
        for change in unconfirmedReadChanges { merged.apply(change) }
        guard merged != marks else { return }
        let deletedBefore = marks.deleted
        marks = merged
        if merged.deleted != deletedBefore { sortDeletions() }
        recountUnread()
    }

    /// Changes the marks here at once and asks for the change on disk, where the home's
    /// other windows see it.
    mutating func changeMarks(_ change: ReadChange) -> [Effect] {
        switch change {
        case .read(let read) where read.count <= 64:
            for range in read.ranges {
                for position in range where !marks.read.contains(position) {
                    marks.read.insert(position)
                    if let entry = item(at: position), entry.gap == nil { unread[entry.category ?? "", default: 0] -= 1 }
                }
            }
            unread = unread.filter { $0.value > 0 }
        case .unread(let positions) where positions.count <= 64:
            for range in positions.ranges {
                for position in range where marks.read.contains(position) {
                    marks.read.remove(position)
                    if let entry = item(at: position), entry.gap == nil { unread[entry.category ?? "", default: 0] += 1 }
                }
            }
        case .read, .unread:
            marks.apply(change)
            recountUnread()
        case .delete, .restore:
            marks.apply(change)
            sortDeletions()
            recountUnread()
            clampLog()
        }
        unconfirmedReadChanges.append(change)
        return [.changeReadMarks(change)]
    }

    /// Moves the deleted messages out of the list, and those no longer deleted back in.
    private mutating func sortDeletions() {
        let deleted = marks.deleted
        let restored = deletedItems.values.filter { !deleted.contains($0.index) }
        if items.contains(where: { deleted.contains($0.index) }) {
            for entry in items where deleted.contains(entry.index) && !entry.pruned { deletedItems[entry.index] = entry }
            items.removeAll { deleted.contains($0.index) }
            resortBySent()
        }
        guard !restored.isEmpty else { return }
        for entry in restored { deletedItems[entry.index] = nil }
        // Merged back in their places: an undo costs one pass over the list, not a sort.
        var merged: [InboxEntry] = []
        merged.reserveCapacity(items.count + restored.count)
        var next = 0
        for entry in restored.sorted(by: { $0.index < $1.index }) {
            while next < items.count, items[next].index < entry.index {
                merged.append(items[next])
                next += 1
            }
            merged.append(entry)
        }
        merged.append(contentsOf: items[next...])
        items = merged
        resortBySent()
    }

    private mutating func recountUnread() {
        unread = [:]
        for entry in items where isUnread(entry) { unread[entry.category ?? "", default: 0] += 1 }
    }

    /// Messages in the list per category name ("" for none), for the category picker.
    func counts() -> [String: Int] {
        var counts: [String: Int] = [:]
        for entry in items { counts[entry.category ?? "", default: 0] += 1 }
        return counts
    }

    /// The entry at log position `position`: items are in log order, so it is found by a
    /// binary search.
    private func item(at position: Int) -> InboxEntry? {
        if let entry = items[safe: position - 1], entry.index == position { return entry }
        var (low, high) = (0, items.count)
        while low < high {
            let middle = (low + high) / 2
            if items[middle].index < position { low = middle + 1 } else { high = middle }
        }
        return items[safe: low].flatMap { $0.index == position ? $0 : nil }
    }

    /// Whether the text field has the keys.
    public var isEditingText: Bool {
        screen == .compose && compose.focus == .text && dialog == nil && !showHelp && chooser == nil && pipePrompt == nil
    }
}
