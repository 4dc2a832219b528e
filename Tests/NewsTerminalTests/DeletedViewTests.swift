import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

/// Issue 45: the log's deleted view (`D`) lists the home's deleted messages, whichever window
/// deleted them, newest first; `u` or Enter restores one in every window of the home.
struct DeletedViewTests {
    static let items = (1...6).map { entry($0, "World", "news \($0)") }

    /// On the log, 3 and 5 deleted by this window, 2 by another.
    static func withDeletions() -> AppState {
        var state = makeState(items: items, rows: 14)
        _ = state.press(.character("3"), .down)
        _ = state.press(.character("x"))  // 5
        _ = state.press(.down, .character("x"))  // 3
        _ = state.reduce(
            .marks(InboxMarks(read: ReadMarks([3...3, 5...6]), deleted: ReadMarks([2...3, 5...5])), changesApplied: 5))
        return state
    }

    @Test func dListsEveryDeletedMessageNewestFirstWithHowToLeave() {
        var state = Self.withDeletions()
        #expect(state.visibleLog.map(\.index) == [6, 4, 1])
        #expect(state.press(.character("D")) == [])
        #expect(state.deletedList.map(\.index) == [5, 3, 2])
        let screen = rendered(state).text
        #expect(
            screen.contains("Deleted   3 deleted messages, newest first · u or Enter restores · D or Esc back to the log"),
            "\(screen)")
        let rows = screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let listed = rows[ScreenGeometry.listTop..<(ScreenGeometry.listTop + 4)]
        #expect(listed.map { $0.contains("news ") } == [true, true, true, false], "\(screen)")
        #expect(listed.first?.contains("news 5") == true && listed.dropLast().last?.contains("news 2") == true, "\(screen)")
        #expect(rows[state.geometry.footerRow].contains("u or Enter restore"), "\(screen)")
        #expect(state.press(.escape) == [])
        #expect(state.log.deletedView == nil)
        _ = state.press(.character("D"), .character("D"))
        #expect(state.log.deletedView == nil, "D leaves it too")
    }

    @Test func uAndEnterRestoreInEveryWindow() {
        var state = Self.withDeletions()
        _ = state.press(.character("D"), .down)
        #expect(state.press(.character("u")) == [.changeReadMarks(.restore(ReadMarks([3...3])))])
        #expect(state.toast?.text == "Restored “news 3” in every window")
        #expect(state.deletedList.map(\.index) == [5, 2])
        #expect(state.log.deletedView?.cursor == 1, "on the next one")
        #expect(state.press(.enter) == [.changeReadMarks(.restore(ReadMarks([2...2])))], "another window's deletion")
        #expect(state.log.deletedView?.cursor == 0, "on the last one left")
        _ = state.press(.escape)
        #expect(state.visibleLog.map(\.index) == [6, 4, 3, 2, 1])
        // z still undoes this window's deletes: 3 is back already, so 5.
        #expect(state.press(.character("z")) == [.changeReadMarks(.restore(ReadMarks([5...5])))])
    }

    @Test func otherKeysSayWhatTheViewIsAndChangeNothing() {
        var state = Self.withDeletions()
        _ = state.press(.character("D"))
        #expect(state.press(.character("x"), .character("A"), .character(" "), .character("/")) == [])
        #expect(state.toast?.text == "The deleted view: u or Enter restores, D or Esc goes back to the log")
        #expect(state.marks.deleted == ReadMarks([2...3, 5...5]))
        #expect(!state.log.searching)
        _ = state.press(.escape)
        #expect(state.toast == nil, "the note about the view goes with it")
    }

    @Test func theViewFollowsAnotherWindowsChangesAndSaysWhenEmpty() {
        var state = Self.withDeletions()
        _ = state.press(.character("D"), .character("G"))
        #expect(state.log.deletedView?.cursor == 2)
        _ = state.reduce(.marks(InboxMarks(deleted: ReadMarks([5...5])), changesApplied: 5))
        #expect(state.deletedList.map(\.index) == [5])
        #expect(state.log.deletedView?.cursor == 0)
        _ = state.reduce(.marks(InboxMarks(), changesApplied: 5))
        #expect(rendered(state).text.contains("No deleted messages"))
        #expect(state.press(.enter) == [])
    }

    @Test func theDeletedViewHasAConfigName() {
        #expect(KeyActions.command(named: "deleted-view") == .deletedView)
        let config = UserConfig.parse(Data(#"{"keys": {"deleted-view": "Ctrl-D"}}"#.utf8), file: "config.json")
        #expect(config.problems.isEmpty, "\(config.problems)")
        var state = Self.withDeletions()
        state.keyMap = config.keyMap
        _ = state.press(.character("D"))
        #expect(state.log.deletedView == nil, "D is no longer it")
        _ = state.press(.control("d"))
        #expect(state.log.deletedView != nil)
        #expect(rendered(state).text.contains("Ctrl-D or Esc back to the log"))
    }

    @Test func aMessagePrunedSinceItWasDeletedIsNotListed() {
        var items = Self.items
        items[0].pruned = true
        var state = AppState(
            categories: names.map { BreakingNewsKit.Category($0) }, selection: [], registration: nil, items: items,
            deleted: ReadMarks([1...1]), rows: 14, columns: 100)
        _ = state.press(.character("3"), .character("D"))
        #expect(state.deletedList.isEmpty, "a pruned stub is not listed")
        #expect(state.press(.character("u")) == [])
        #expect(state.toast?.text == "No deleted message to restore")
    }
}
