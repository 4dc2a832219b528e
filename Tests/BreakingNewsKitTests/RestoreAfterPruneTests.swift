import BreakingNewsKit
import Foundation
import Testing

/// Issue 45: a restore (an undo, the deleted view) from a window that has not seen a prune
/// leaves the pruned messages deleted: only their stubs are left to show.
struct RestoreAfterPruneTests {
    @Test func aRestoreNeverBringsBackAPrunedStub() throws {
        let url = temporaryFolder().appendingPathComponent("inbox.jsonl")
        let log = InboxLog(url: url)
        let now = InboxPruneTests.now
        try log.append(
            [InboxPruneTests.delivery(1)], hub: "http://h/news", categoryOf: { _ in "World" },
            now: now.addingTimeInterval(-10 * 86_400))
        try log.append([InboxPruneTests.delivery(2)], hub: "http://h/news", categoryOf: { _ in "World" }, now: now)
        // A window deletes both; another window's launch prunes the old one.
        let window = InboxLog(url: url)
        #expect(window.apply(.delete(ReadMarks([1...2]))).deleted == ReadMarks([1...2]))
        #expect(try log.prune(keepingDays: 7, now: now) == 1)
        // The first window, which has not read the log since, restores both.
        let marks = window.apply(.restore(ReadMarks([1...2])))
        #expect(marks.deleted == ReadMarks([1...1]), "the stub stays deleted, the other is back")
        #expect(InboxLog(url: url).shownEntries.map(\.index) == [2])
    }
}
