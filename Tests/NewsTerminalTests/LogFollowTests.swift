import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

/// Issue 28, finding 5: the log follows the newest, says what came above, and deletes.
struct LogFollowTests {
    static let items = (1...5).map { entry($0, "World", "news \($0)") }

    @Test func onTheNewestTheCursorFollowsElsewhereTheViewStays() {
        var state = makeState(items: Self.items, rows: 14)
        _ = state.press(.character("3"))
        _ = state.reduce(.inbox(.received([entry(6, "World", "news 6")])))
        #expect(state.log.cursor == 0 && state.entryUnderCursor?.text == "news 6")
        #expect(state.isUnread(state.entryUnderCursor!), "followed, not read")
        _ = state.press(.down, .down)
        let under = state.entryUnderCursor
        _ = state.reduce(.inbox(.received([entry(7, "World", "news 7"), entry(8, "World", "news 8")])))
        #expect(state.entryUnderCursor == under, "the cursor stays on its message")
        #expect(state.log.newAbove == 2)
        #expect(rendered(state).text.contains("↑ 2 new above · g newest"))
        _ = state.press(.character("g"))
        #expect(state.log.newAbove == 0 && state.entryUnderCursor?.text == "news 8")
    }

    @Test func xDeletesZBringsBackAndAnotherWindowsDeletionsAreFollowed() {
        var state = makeState(items: Self.items, rows: 14)
        _ = state.press(.character("3"), .down)
        #expect(state.entryUnderCursor?.index == 4)
        #expect(state.press(.character("x")) == [.changeReadMarks(.delete(ReadMarks([4...4])))])
        #expect(state.visibleLog.map(\.index) == [5, 3, 2, 1])
        #expect(state.entryUnderCursor?.index == 3 && state.isUnread(state.entryUnderCursor!), "not read by the delete")
        #expect(state.press(.character("z")) == [.changeReadMarks(.restore(ReadMarks([4...4])))])
        #expect(state.visibleLog.map(\.index) == [5, 4, 3, 2, 1])
        #expect(state.press(.character("z")) == [], "one undo")
        #expect(state.toast?.text == "Nothing to undo")
        // Another window deleted 2 and read 1.
        _ = state.reduce(
            .marks(InboxMarks(read: ReadMarks([1...1, 5...5, 4...4]), deleted: ReadMarks([2...2])), changesApplied: 3))
        #expect(state.visibleLog.map(\.index) == [5, 4, 3, 1])
        #expect(state.unreadTotal == 1)
        _ = state.press(.delete)
        #expect(state.marks.deleted.contains(4) || state.marks.deleted.contains(3))
    }

    @Test func aIsUndoneAndSpaceSaysWhenNothingIsUnread() {
        var state = makeState(items: Self.items, rows: 14)
        _ = state.press(.character("3"))
        #expect(state.press(.character("A")) == [.changeReadMarks(.read(ReadMarks([1...4])))])
        #expect(state.unreadTotal == 0)
        #expect(state.press(.character(" ")) == [])
        #expect(state.toast?.text == "No unread messages")
        #expect(state.press(.character("z")) == [.changeReadMarks(.unread(ReadMarks([1...4])))])
        #expect(state.unreadTotal == 4)
    }

    @Test func searchCountsAndFolds() {
        var state = makeState(items: [
            entry(1, "World", "Élection night"), entry(2, "World", "election day"), entry(3, "World", "x"),
        ])
        _ = state.press(.character("3"), .character("/"))
        _ = state.type("ELECTION")
        #expect(state.log.matches == 2)
        _ = state.press(.escape, .character("/"))
        _ = state.type("zz")
        #expect(state.log.matches == 0)
        #expect(rendered(state).text.contains("no match"))
    }
}
