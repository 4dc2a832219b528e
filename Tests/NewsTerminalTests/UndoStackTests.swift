import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

/// Issue 45: `z` undoes this window's deletes and `A`s one by one, newest first, for as long
/// as the window is open, and changes back only what each one changed.
struct UndoStackTests {
    static let items = (1...6).map { entry($0, "World", "news \($0)") }

    static func restore(_ position: Int) -> [Effect] { [.changeReadMarks(.restore(ReadMarks([position...position])))] }

    /// On the log with the cursor on the newest (6, read by landing there).
    static func onTheLog(_ items: [InboxEntry] = items) -> AppState {
        var state = makeState(items: items, rows: 14)
        _ = state.press(.character("3"))
        return state
    }

    @Test func threeDeletesAreUndoneOneByOneNewestFirst() {
        var state = Self.onTheLog()
        _ = state.press(.character("x"), .character("x"), .character("x"))
        #expect(state.visibleLog.map(\.index) == [3, 2, 1])
        #expect(state.press(.character("z")) == Self.restore(4))
        #expect(state.toast?.text == "Undone: “news 4” is back · 2 more to undo")
        #expect(state.press(.character("z")) == Self.restore(5))
        #expect(state.toast?.text == "Undone: “news 5” is back · 1 more to undo")
        #expect(state.press(.character("z")) == Self.restore(6))
        #expect(state.toast?.text == "Undone: “news 6” is back")
        #expect(state.visibleLog.map(\.index) == [6, 5, 4, 3, 2, 1])
        #expect(state.marks.deleted.isEmpty)
        #expect(state.press(.character("z")) == [])
        #expect(state.toast?.text == "Nothing to undo")
    }

    @Test func aThenZMarksUnreadWhatItMarkedRead() {
        var state = Self.onTheLog()
        #expect(state.press(.character("A")) == [.changeReadMarks(.read(ReadMarks([1...5])))])
        #expect(state.press(.character("z")) == [.changeReadMarks(.unread(ReadMarks([1...5])))])
        #expect(state.toast?.text == "Undone: 5 unread again")
        #expect(state.readMarks == ReadMarks([6...6]), "the newest, read before the A, stays read")
        #expect(state.press(.character("z")) == [])
        #expect(state.toast?.text == "Nothing to undo")
    }

    /// Three deletes and an `A`, then four `z`: the read marks as before the `A`, and the
    /// three messages back in the list.
    @Test func deletesAndAnAAreAllUndone() {
        var state = Self.onTheLog()
        _ = state.press(.down)  // 5 read
        _ = state.press(.character("x"), .character("x"), .character("x"))  // 5, 4, 3
        let readBefore = state.readMarks
        #expect(readBefore == ReadMarks([5...6]))
        #expect(state.press(.character("A")) == [.changeReadMarks(.read(ReadMarks([1...2])))])
        #expect(state.unreadTotal == 0)
        #expect(state.press(.character("z")) == [.changeReadMarks(.unread(ReadMarks([1...2])))])
        #expect(state.toast?.text == "Undone: 2 unread again · 3 more to undo")
        #expect(state.readMarks == readBefore)
        #expect(state.press(.character("z"), .character("z"), .character("z")) == [3, 4, 5].flatMap(Self.restore))
        #expect(state.visibleLog.map(\.index) == [6, 5, 4, 3, 2, 1])
        #expect(state.readMarks == readBefore)
        #expect(state.marks == InboxMarks(read: readBefore))
        #expect(state.press(.character("z")) == [])
        #expect(state.toast?.text == "Nothing to undo")
    }

    /// The stack keeps the last `undoLimit` actions: the oldest beyond are forgotten. (Here
    /// each an `A` of the one message that just arrived: a delete costs the reducer more.)
    @Test func theStackKeepsTheLastThousandActions() {
        var state = Self.onTheLog([entry(1, "World", "news 1")])
        let last = AppState.undoLimit + 6
        for position in 2...last {
            _ = state.reduce(.inbox(.received([entry(position, "World", "news \(position)")])))
            #expect(state.press(.character("A")) == [.changeReadMarks(.read(ReadMarks([position...position])))])
        }
        #expect(state.undos.count == AppState.undoLimit)
        #expect(state.unreadTotal == 0)
        _ = state.press(.character("z"))
        #expect(state.toast?.text == "Undone: 1 unread again · \(AppState.undoLimit - 1) more to undo")
        for _ in 1..<AppState.undoLimit { _ = state.press(.character("z")) }
        #expect(state.unreadTotal == AppState.undoLimit)
        #expect(state.press(.character("z")) == [])
        #expect(state.toast?.text == "Nothing to undo")
        #expect(state.readMarks == ReadMarks([1...6]), "the five oldest As are past the bound: still read")
    }

    /// Another window deletes and reads meanwhile: an undo changes back only what this
    /// window's action changed, and passes over an action the other window undid already.
    @Test func anUndoLeavesAnotherWindowsChangesAlone() {
        var state = Self.onTheLog()
        _ = state.press(.character("x"))  // deletes 6
        _ = state.press(.character("x"))  // deletes 5
        // The other window deleted 2, read 1 and restored 5; both of this window's changes
        // (and its read of 6 on landing) are on disk.
        _ = state.reduce(
            .marks(InboxMarks(read: ReadMarks([1...1, 6...6]), deleted: ReadMarks([2...2, 6...6])), changesApplied: 3))
        #expect(state.visibleLog.map(\.index) == [5, 4, 3, 1])
        #expect(state.press(.character("z")) == Self.restore(6), "5 is back already: its undo is passed over")
        #expect(state.visibleLog.map(\.index) == [6, 5, 4, 3, 1])
        #expect(state.marks.deleted == ReadMarks([2...2]), "the other window's delete stays")
        #expect(state.readMarks == ReadMarks([1...1, 6...6]))
        #expect(state.press(.character("z")) == [])

        // An A, then the other window marks one of them unread and reads one A did not.
        state = Self.onTheLog()
        _ = state.press(.character("A"))  // 1...5
        _ = state.reduce(.marks(InboxMarks(read: ReadMarks([2...6])), changesApplied: 2))
        _ = state.reduce(.inbox(.received([entry(7, "World", "news 7")])))
        _ = state.reduce(.marks(InboxMarks(read: ReadMarks([2...7])), changesApplied: 2))
        #expect(state.press(.character("z")) == [.changeReadMarks(.unread(ReadMarks([2...5])))])
        #expect(state.toast?.text == "Undone: 4 unread again")
        #expect(state.readMarks == ReadMarks([6...7]), "the other window's read of 7 stays")
    }
}
