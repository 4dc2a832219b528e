import BreakingNewsKit
import Foundation
import NotificationHubs
import Testing

@testable import NewsTerminal

/// Issue 47: catching up on a week. The Log lists by the time each message was sent, in the
/// order the reader chooses, under a separator for each day; Space and `p` walk the unread
/// and say when they wrap; the search says which match the cursor is on.
struct CatchingUpTests {
    /// A W3C time `hours` before `now` (the state's).
    static func ago(_ hours: Double) -> String { W3CDate.format(now.addingTimeInterval(-hours * 3600)) }

    /// Midday, local time, so that hours before it fall on the days expected.
    static let now: Date = {
        let components = DateComponents(year: 2026, month: 12, day: 2, hour: 12)
        return Calendar.current.date(from: components)!
    }()

    /// Messages `sent` hours ago, in this log order.
    static func week(_ sent: [Double], read: [Int] = []) -> AppState {
        let items = sent.enumerated().map { offset, hours in
            entry(offset + 1, names[offset % names.count], "news \(offset + 1)", receivedAt: ago(hours))
        }
        var state = AppState(
            categories: names.map { BreakingNewsKit.Category($0) }, selection: [], registration: nil, items: items,
            readMarks: ReadMarks(read.map { $0...$0 }), rows: 30, columns: 100, now: now)
        _ = state.press(.character("3"))
        return state
    }

    static func texts(_ state: AppState) -> [String] { state.visibleLog.map(\.text) }

    @Test func theLogListsByTheTimeSentWhateverOrderMessagesArrivedIn() {
        // The third arrived last but was sent first (another hub, a late delivery).
        var state = Self.week([2, 1, 30])
        #expect(Self.texts(state) == ["news 2", "news 1", "news 3"])
        _ = state.press(.character("O"))
        #expect(Self.texts(state) == ["news 3", "news 1", "news 2"])
        #expect(state.toast?.text == "Oldest first")
        // One that arrives now, sent in between, takes its place by its send time.
        _ = state.reduce(.inbox(.received([entry(4, "World", "news 4", receivedAt: Self.ago(1.5))])))
        #expect(Self.texts(state) == ["news 3", "news 1", "news 4", "news 2"])
    }

    @Test func turningTheOrderRoundKeepsTheCursorOnItsMessageAndReadsNothing() {
        var state = Self.week([5, 4, 3, 2, 1], read: [1, 2, 3, 4, 5])
        _ = state.press(.character("j"))
        #expect(state.entryUnderCursor?.text == "news 4")
        let effects = state.press(.character("O"))
        #expect(state.entryUnderCursor?.text == "news 4")
        #expect(state.log.cursor == 3)
        #expect(!effects.contains { if case .changeReadMarks = $0 { true } else { false } })
    }

    @Test func spaceAndPWalkTheUnreadInTheOrderShownAndSayWhenTheyWrap() {
        // Unread: 2 and 4 (of five, sent an hour apart, 1 the oldest).
        var state = Self.week([5, 4, 3, 2, 1], read: [1, 3, 5])
        _ = state.press(.character("O"))
        _ = state.press(.character("g"))
        #expect(state.entryUnderCursor?.text == "news 1")
        _ = state.press(.character(" "))
        #expect(state.entryUnderCursor?.text == "news 2")
        _ = state.press(.character("p"))
        // Nothing unread above 2 now that 2 is read: round to 4, said so.
        #expect(state.entryUnderCursor?.text == "news 4")
        #expect(state.toast?.text == "No unread above: wrapped to the bottom")
        // 4 unread again; from the last, Space goes round to it.
        _ = state.press(.character("u"), .character("G"), .character(" "))
        #expect(state.entryUnderCursor?.text == "news 4")
        #expect(state.toast?.text == "No unread below: wrapped to the top")
        _ = state.press(.character(" "))
        #expect(state.toast?.text == "No unread messages")
    }

    @Test func spaceInOldestFirstOrderVisitsEveryUnreadOnceOldestFirst() {
        // Forty messages four hours apart; every third read, the oldest among them.
        let sent = (0..<40).map { Double(40 - $0) * 4 }
        var state = Self.week(sent, read: Array(stride(from: 1, through: 40, by: 3)))
        _ = state.press(.character("O"), .character("g"))
        #expect(state.entryUnderCursor?.text == "news 1")
        let unread = state.visibleLog.filter { state.isUnread($0) }.map(\.text)
        #expect(unread.count == 26)
        var visited: [String] = []
        for _ in unread {
            _ = state.press(.character(" "))
            visited.append(state.entryUnderCursor?.text ?? "")
        }
        #expect(visited == unread)
        #expect(state.unreadTotal == 0)
        _ = state.press(.character(" "))
        #expect(state.toast?.text == "No unread messages")
    }

    @Test func theSearchSaysWhichMatchTheCursorIsOnAndWhenItWraps() {
        var state = Self.week([6, 5, 4, 3, 2, 1])
        _ = state.press(.character("/"))
        _ = state.type("news")
        _ = state.press(.enter)
        #expect(state.log.matches == 6)
        #expect(rendered(state).text.contains("search “news” · 1 of 6"))
        _ = state.press(.character("n"), .character("n"))
        #expect(rendered(state).text.contains("· 3 of 6"))
        _ = state.press(.character("G"))
        #expect(rendered(state).text.contains("· 6 matches"), "the cursor went elsewhere")
        _ = state.press(.character("n"))
        #expect(state.log.cursor == 0)
        #expect(state.toast?.text == "Search wrapped to the top")
        #expect(rendered(state).text.contains("· 1 of 6"))
        _ = state.press(.character("N"))
        #expect(state.toast?.text == "Search wrapped to the bottom")
    }

    @Test func eachDayHasItsSeparatorAndTheCursorStaysOnThePage() {
        // Six days, three messages a day.
        let sent = (0..<18).map { Double(17 - $0) * 8 }
        var state = Self.week(sent)
        let screen = rendered(state).text
        let lines = screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let separators = lines.filter { $0.hasPrefix("  ") && $0.contains(" ───") }.map {
            $0.trimmingCharacters(in: .whitespaces).split(separator: " ").first.map(String.init) ?? ""
        }
        // The first day on the line above the list, the others among the messages.
        #expect(lines[ScreenGeometry.listTop - 1].hasPrefix("  Today ───"))
        #expect(separators.dropFirst().first == "Yesterday")
        #expect(separators.dropFirst(2).first == DisplayTime.dayName(Self.now.timeIntervalSince1970 - 2 * 86_400, now: Self.now))
        #expect(Set(separators).count == separators.count, "a day named twice: \(separators)")
        // Down to the last: the cursor's row is drawn whatever the separators took.
        for _ in 0..<17 { _ = state.press(.character("j")) }
        #expect(state.log.cursor == 17)
        let last = state.visibleLog[17].text
        #expect(rendered(state).text.contains(last))
        let page = LogScreen.page(state, from: state.log.top)
        #expect(page.lines.count <= state.logPageSize)
        #expect(page.day != nil, "a page names its first day")
    }

    @Test func arrivalsOldestFirstComeInBelowAndTheCursorOnTheNewestFollows() {
        var state = Self.week([3, 2, 1])
        _ = state.press(.character("O"), .character("G"))
        #expect(state.entryUnderCursor?.text == "news 3")
        _ = state.reduce(.inbox(.received([entry(4, "World", "news 4", receivedAt: Self.ago(0.5))])))
        #expect(state.entryUnderCursor?.text == "news 4", "on the newest, it follows")
        _ = state.press(.character("g"))
        _ = state.reduce(.inbox(.received([entry(5, "World", "news 5", receivedAt: Self.ago(0.2))])))
        #expect(state.entryUnderCursor?.text == "news 1", "elsewhere, it stays")
        #expect(state.log.newAbove == 1)
    }

    @Test func theOrderSettingIsReadFromConfigJSON() {
        let oldest = UserConfig.parse(Data(#"{"order": "oldest"}"#.utf8), file: "c")
        #expect(oldest.order == .oldestFirst && oldest.problems.isEmpty)
        let bad = UserConfig.parse(Data(#"{"order": "sideways"}"#.utf8), file: "c")
        #expect(bad.order == .newestFirst)
        #expect(bad.problems == [#"c: order: must be "newest" or "oldest""#])
    }

    @Test func ctrlDAndCtrlUMoveHalfAPage() {
        var state = Self.week((0..<60).map { Double(60 - $0) / 10 })
        let half = state.logPageSize / 2
        _ = state.press(.control("d"))
        #expect(state.log.cursor == half)
        _ = state.press(.control("f"))
        #expect(state.log.cursor == half + state.logPageSize)
        _ = state.press(.control("u"), .control("b"))
        #expect(state.log.cursor == 0)
    }

    @Test func aNoticeThatMessagesExpiredIsListedInTheirPlaceNotCountedAsAMessage() throws {
        let read = entry(1, "World", "news 1", receivedAt: Self.ago(200))
        // Written when the terminal came back, after a week away.
        let gap = InboxEntry(
            testing: BuiltInPushGap(through: 40, expired: 12), hubName: "news", index: 2, receivedAt: Self.ago(0.5))
        let later = [
            entry(3, "World", "news 3", receivedAt: Self.ago(30)), entry(4, "Sports", "news 4", receivedAt: Self.ago(20)),
        ]
        var state = AppState(
            categories: names.map { BreakingNewsKit.Category($0) }, selection: [], registration: nil,
            items: [read, gap] + later, readMarks: ReadMarks([1...1]), rows: 30, columns: 100, now: Self.now)
        _ = state.press(.character("3"))
        // Newest first: the two that survived, then the notice where the expired ones were.
        #expect(Self.texts(state) == ["news 4", "news 3", gap.text, "news 1"])
        // The newest, under the cursor, was read: the other is the one unread.
        #expect(state.unreadTotal == 1)
        let screen = rendered(state).text
        #expect(screen.contains("all categories · 3 messages · 1 unread"), "\(screen)")
        let row = try #require(screen.split(separator: "\n").first { $0.contains("expired") })
        #expect(row.contains("⋯ 12 messages expired") && !row.contains("●"), "\(row)")
        // Space goes from message to message, past the notice.
        _ = state.press(.character(" "))
        #expect(state.entryUnderCursor?.text == "news 3")
        _ = state.press(.character(" "))
        #expect(state.toast?.text == "No unread messages")
    }

    @Test func theHelpWrapsItsDescriptionsOnANarrowScreen() {
        let geometry = ScreenGeometry(rows: 14, columns: 50)
        let lines = Layout.helpLines(.standard, geometry)
        #expect(lines.allSatisfy { TextWidth.of($0) <= 44 }, "\(lines.filter { TextWidth.of($0) > 44 })")
        // Every description is there whole, over as many lines as it takes.
        let words = lines.joined(separator: " ").split(separator: " ").joined(separator: " ")
        for line in KeyMap.helpLines {
            #expect(words.contains(line.summary.split(separator: " ").joined(separator: " ")), "\(line.summary)")
        }
    }

    @Test func aNarrowFooterKeepsTheScreensOwnKeys() {
        var state = makeState(rows: 14, columns: 50)
        let categories = rendered(state).text.split(separator: "\n").last.map(String.init) ?? ""
        #expect(categories.contains("toggle") && categories.contains("subscribe"), "\(categories)")
        _ = state.press(.character("3"))
        let log = rendered(state).text.split(separator: "\n").last.map(String.init) ?? ""
        #expect(log.contains("search") && log.contains("limit"), "\(log)")
    }

    /// A note in the footer's row goes at the next key, so that a box opened after it shows
    /// its own keys there, not the note of a paste set aside before.
    @Test func aNoteGoesAtTheNextKeyAndTheBoxShowsItsKeys() {
        var state = Self.week([3, 2, 1])
        _ = state.press(.burst("Please mark all of this as read and quit now"))
        #expect(state.toast?.text == AppState.pasteSetAside)
        #expect(state.unreadTotal == 2, "the sentence changed nothing")
        _ = state.press(.character("l"))
        #expect(state.toast == nil)
        let footer = rendered(state).lines.last ?? ""
        #expect(footer.contains("Esc close"), "\(footer)")
    }
}
