import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

/// Read state that means something (issue 12, finding 5): a message is read when the cursor
/// goes to it or it is opened, not when a window lists it or the log is left.
struct ReadStateTests {
    /// Twelve messages, newest first on screen: positions 0…11 are log entries 12…1. None read.
    static let items = (1...12).map { entry($0, names[$0 % 6], "news \($0)") }

    func read(_ position: Int) -> [Effect] { [.changeReadMarks(.read(ReadMarks([position...position])))] }

    @Test func theCursorReadsWhereItGoesAndNowhereElse() {
        var state = makeState(items: Self.items, rows: 14)
        #expect(state.unreadTotal == 12)
        #expect(state.press(.character("3")) == read(12))
        #expect(state.press(.down) == read(11))
        #expect(state.press(.up) == [], "already read")
        #expect(state.press(.pageDown) == read(12 - state.logPageSize))
        #expect(state.unreadTotal == 9)
        _ = state.press(.character("1"))
        #expect(state.unreadTotal == 9, "leaving the log reads nothing more")
        #expect(state.unread[names[11 % 6]] == 1)
    }

    @Test func spaceJumpsToTheNextUnreadBelowAndWraps() {
        var state = makeState(items: Self.items, read: ["World": 12, "Politics": 12], rows: 14)
        // Read: 6 and 12 (World), 1 and 7 (Politics); entry 12 is on top.
        _ = state.press(.character("3"))
        #expect(state.press(.character(" ")) == read(11))
        #expect(state.log.cursor == 1)
        _ = state.press(.character("G"))
        #expect(state.log.cursor == 11)
        #expect(state.visibleLog[11].index == 1)
        // From the bottom it wraps to the top, skipping what is read (12).
        _ = state.press(.character(" "))
        #expect(state.log.cursor == 2 && state.visibleLog[2].index == 10)
    }

    @Test func uTogglesAndAReadsWhatTheFilterShows() {
        var state = makeState(items: Self.items, rows: 14)
        _ = state.press(.character("3"))
        #expect(state.press(.character("u")) == [.changeReadMarks(.unread(ReadMarks([12...12])))])
        #expect(state.visibleLog.first.map(state.isUnread) == true, "the cursor resting on it does not read it again")
        #expect(state.press(.character("u")) == read(12))
        _ = state.press(.character("j"))  // 11 read
        #expect(state.press(.character("c"), .down, .down, .enter) == [], "a filter reads nothing")
        #expect(state.log.filter?.name == "Politics")
        _ = state.press(.character("c"), .up, .enter)
        #expect(state.log.filter?.name == "World")
        let effects = state.press(.character("A"))
        #expect(effects == [.changeReadMarks(.read(ReadMarks([6...6])))], "only what the filter shows")
        #expect(state.unread["World"] == nil)
        #expect(state.unreadTotal == 9)
    }

    @Test func aSearchReadsWhereItEndedAndOpeningReads() {
        var state = makeState(items: Self.items, rows: 14)
        _ = state.press(.character("3"), .character("/"))
        #expect(state.type("news 3") == [], "matches typed past are not read")
        #expect(state.press(.enter) == read(3))
        _ = state.press(.character("u"), .enter)
        #expect(state.dialog?.message == "news 3")
        #expect(!state.isUnread(state.visibleLog[state.log.cursor]), "opened, so read")
    }

    @Test func marksFromAnotherWindowAreTakenEvenOnTheLog() {
        var state = makeState(items: Self.items, rows: 14)
        _ = state.press(.character("3"))
        _ = state.reduce(.marks(InboxMarks(read: ReadMarks([1...12])), changesApplied: 1))
        #expect(state.unreadTotal == 0)
        _ = state.reduce(.marks(InboxMarks(read: ReadMarks([1...10])), changesApplied: 1))
        #expect(state.unread == [names[11 % 6]: 1, names[12 % 6]: 1])
    }

    /// Marks read from disk before this window's newest changes were written there do not
    /// undo them: the window's own changes not yet applied stay on top until they are.
    @Test func aSnapshotOlderThanTheWindowsOwnChangesDoesNotUndoThem() {
        var state = makeState(items: Self.items, rows: 14)
        _ = state.press(.character("3"))  // change 1: 12 read
        _ = state.press(.character("u"))  // change 2: 12 unread
        _ = state.press(.down)  // change 3: 11 read
        // Read from disk after change 1 only, with another window's read of 1 on it.
        _ = state.reduce(.marks(InboxMarks(read: ReadMarks([1...1, 12...12])), changesApplied: 1))
        #expect(state.readMarks == ReadMarks([1...1, 11...11]))
        #expect(state.unreadTotal == 10)
        // Later, everything applied: the disk is the truth again.
        _ = state.reduce(.marks(InboxMarks(read: ReadMarks([1...1, 5...5, 11...11])), changesApplied: 3))
        #expect(state.readMarks == ReadMarks([1...1, 5...5, 11...11]))
        #expect(state.unconfirmedReadChanges.isEmpty)
    }

    @Test func theLogTitleCountsUnread() {
        var state = makeState(items: Self.items, rows: 14)
        _ = state.press(.character("3"))
        let terminal = VirtualTerminal(rows: 14, columns: 80)
        Layout.render(state, on: terminal)
        #expect(terminal.text.contains("all categories · 12 messages · 11 unread"))
        #expect(terminal.text.contains("3 Log (11)"))
    }
}
