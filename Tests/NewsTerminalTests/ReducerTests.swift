import BreakingNewsKit
import Foundation
import NotificationHubs
import Testing

@testable import NewsTerminal

let names = ["World", "Politics", "Business", "Technology", "Science", "Sports"]

func entry(_ index: Int, _ category: String, _ text: String, receivedAt: String = "2026-11-21T10:00:00Z") -> InboxEntry {
    let delivery = BuiltInPushDelivery(
        seq: Int64(index), notificationId: "n\(index)", hub: "news", device: "ab", template: "simpleAPNSTemplate", tags: category,
        deliveredAt: receivedAt, payload: .object([("aps", .object([("alert", .string(text))]))]), epoch: "e")
    return InboxEntry(testing: delivery, category: category, index: index, receivedAt: receivedAt)
}

/// Categories written as their names, in tests.
extension BreakingNewsKit.Category: ExpressibleByStringLiteral {
    public init(stringLiteral name: String) { self.init(name) }
}

func makeState(
    selection: [BreakingNewsKit.Category] = [], items: [InboxEntry] = [], read: [String: Int] = [:], rows: Int = 30,
    columns: Int = 100
) -> AppState {
    AppState(
        categories: names.map { BreakingNewsKit.Category($0) }, selection: selection, registration: nil, items: items,
        readMarks: ReadMarks(items.filter { $0.index <= read[$0.category ?? ""] ?? 0 }.map { $0.index...$0.index }),
        rows: rows, columns: columns, now: Date(timeIntervalSince1970: 1_000))
}

/// `state` drawn on a virtual terminal of its size.
func rendered(_ state: AppState) -> VirtualTerminal {
    let terminal = VirtualTerminal(rows: state.rows, columns: state.columns)
    Layout.render(state, on: terminal)
    return terminal
}

extension AppState {
    /// Feeds keys; returns every effect they asked for.
    mutating func press(_ keys: Key...) -> [Effect] {
        keys.flatMap { reduce(.key($0)) }
    }

    mutating func type(_ text: String) -> [Effect] {
        text.flatMap { reduce(.key(.character($0))) }
    }
}

struct CategoriesReducerTests {
    @Test func switchesToggleAndSubscribeStoresInScreenOrder() {
        var state = makeState()
        #expect(state.screen == .categories)
        #expect(state.categoryCursor == 0)
        #expect(state.press(.character(" ")) == [])
        #expect(state.switches == ["World"])
        _ = state.press(.character("j"), .down, .down, .down, .down)
        #expect(state.categoryCursor == 5)
        _ = state.press(.enter)
        #expect(state.switches == ["World", "Sports"])
        #expect(state.press(.character("s")) == [.subscribe(["World", "Sports"])])
        #expect(state.registering)
        #expect(state.press(.character("s")) == [], "no second subscribe while one runs")
    }

    @Test func enterOnTheSubscribeButtonSubscribes() {
        var state = makeState(selection: ["Politics"])
        _ = state.press(.character("G"))
        #expect(state.categoryCursor == names.count - 1, "G: the last category")
        _ = state.press(.down)
        #expect(state.categoryCursor == names.count)
        #expect(state.press(.enter) == [.subscribe(["Politics"])])
    }

    /// A subscribe that worked says so in the status line; no box to dismiss (issue 28, finding 7).
    @Test func aSuccessfulSubscribeSaysSoWithoutABox() {
        var state = makeState()
        _ = state.press(.character(" "), .character("s"))
        let record = RegistrationRecord(state: .registered, at: "2026-11-21T10:00:00Z", categories: ["World"], hub: "h")
        _ = state.reduce(.registration(record, userInitiated: true))
        #expect(state.dialog == nil)
        #expect(state.toast?.text == "✓ Subscribed: news for World reaches this terminal")
        #expect(!state.registering)
        // The keys go on working.
        _ = state.press(.character("j"))
        #expect(state.categoryCursor == 1)
    }

    @Test func failuresSayWhatToDo() {
        var state = makeState()
        let pending = RegistrationRecord(state: .pending, at: "t", categories: ["World"], hub: "h", detail: "connection refused")
        _ = state.reduce(.registration(pending, userInitiated: true))
        #expect(state.dialog?.title == "Error subscribing")
        #expect(state.dialog?.message.contains("press s to try now") == true)
        _ = state.press(.escape)
        let failed = RegistrationRecord(state: .failed, at: "t", categories: ["World"], hub: "h", detail: "401 ExpiredToken")
        _ = state.reduce(.registration(failed, userInitiated: true))
        #expect(state.dialog?.message.contains("401 ExpiredToken") == true)
        // A launch registration updates the status without a dialog.
        _ = state.press(.enter)
        _ = state.reduce(.registration(pending, userInitiated: false))
        #expect(state.dialog == nil)
        #expect(state.registration == pending)
    }

    @Test func screensCycleAndJump() {
        var state = makeState()
        _ = state.press(.tab)
        #expect(state.screen == .compose)
        _ = state.press(.tab)
        #expect(state.screen == .log)
        _ = state.press(.tab)
        #expect(state.screen == .categories)
        _ = state.press(.backTab)
        #expect(state.screen == .log)
        _ = state.press(.character("1"))
        #expect(state.screen == .categories)
        _ = state.press(.character("3"))
        #expect(state.screen == .log)
    }

    @Test func quitAndHelp() {
        var state = makeState()
        _ = state.press(.character("?"))
        #expect(state.showHelp)
        #expect(state.press(.character("q")) == [])
        #expect(!state.showHelp)
        #expect(!state.quitting)
        #expect(state.press(.character("q")) == [.quit])
        #expect(state.quitting)
        var other = makeState()
        #expect(other.reduce(.quit) == [.quit])
    }
}

struct ComposeReducerTests {
    func composing() -> AppState {
        var state = makeState()
        _ = state.press(.character("2"))
        return state
    }

    @Test func theTextFieldEditsWithWideCharacters() {
        var state = composing()
        #expect(state.isEditingText)
        _ = state.type("Hello 世界")
        _ = state.press(.left, .left)
        _ = state.type("大")
        #expect(String(state.compose.text) == "Hello 大世界")
        _ = state.press(.home, .delete)
        #expect(String(state.compose.text) == "ello 大世界")
        _ = state.press(.end, .backspace)
        #expect(String(state.compose.text) == "ello 大世")
        _ = state.press(.left, .control("u"))
        #expect(String(state.compose.text) == "世")
        #expect(state.compose.cursor == 0)
        _ = state.press(.control("k"))
        #expect(state.compose.text.isEmpty)
        // Keys that mean something elsewhere are text here.
        _ = state.type("q1?")
        #expect(String(state.compose.text) == "q1?")
        #expect(state.screen == .compose)
        #expect(!state.quitting)
    }

    @Test func enterSendsToTheCheckedCategories() {
        var state = composing()
        #expect(state.compose.checked == Array(repeating: false, count: 6), "nothing is preselected")
        _ = state.press(.escape, .character(" "), .up)
        _ = state.type("  Goal!  ")
        #expect(state.press(.enter) == [.send(text: "Goal!", categories: ["World"])], "one category: no question")
        #expect(state.compose.sending)
        _ = state.reduce(.sent([SendResultRow(category: "World", succeeded: true, detail: "id")]))
        #expect(!state.compose.sending)
        #expect(state.compose.text.isEmpty, "a fully sent message clears the field")
        #expect(state.compose.results.count == 1)
    }

    /// More than one category asks once, listing them (issue 12, finding 2).
    @Test func sendingToSeveralCategoriesAsksOnce() {
        var state = composing()
        // [All] is the box after the six.
        _ = state.press(.escape, .right, .right, .right, .right, .right, .right, .character(" "), .up)
        _ = state.type("Markets rally")
        #expect(state.press(.enter) == [], "nothing goes before the answer")
        let question = try? #require(state.dialog)
        #expect(question?.title == "Send to 6 categories?")
        #expect(question?.message.contains("World, Politics, Business, Technology, Science, Sports") == true)
        #expect(state.press(.escape) == [])
        #expect(state.dialog == nil && !state.compose.sending, "Esc cancels")
        _ = state.press(.enter)
        #expect(
            state.press(.enter) == [.send(text: "Markets rally", categories: names.map { BreakingNewsKit.Category($0) })])
        #expect(state.compose.sending)
    }

    /// A paste is text: its line feeds stay in the message and nothing is sent.
    @Test func aPasteIsTextNotEnter() {
        var state = composing()
        _ = state.type("> ")
        #expect(state.press(.paste("line one\nline two")) == [])
        #expect(String(state.compose.text) == "> line one\nline two")
        #expect(state.compose.cursor == state.compose.text.count)
        #expect(!state.compose.sending)
    }

    /// Editing as in a shell (issue 12, finding 3): what the user sees as one character is
    /// one, however many code points the terminal sent for it; words go with Ctrl-W and Alt.
    @Test func editingMovesOverWhatTheUserSeesAndByWords() {
        var state = composing()
        // 🗳️ is U+1F5F3 U+FE0F, 🇫🇷 two regional indicators, é an e and U+0301: each arrives
        // as separate keys.
        for scalar in "vote 🗳️ 🇫🇷 é".unicodeScalars { _ = state.press(.character(Character(scalar))) }
        #expect(String(state.compose.text) == "vote 🗳️ 🇫🇷 é")
        #expect(state.compose.text.count == 10)
        _ = state.press(.backspace)
        #expect(String(state.compose.text) == "vote 🗳️ 🇫🇷 ")
        _ = state.press(.left, .backspace)
        #expect(String(state.compose.text) == "vote 🗳️  ")
        _ = state.press(.end, .control("w"))
        #expect(String(state.compose.text) == "vote ")
        _ = state.type("one two three")
        _ = state.press(.alt("b"), .alt("b"))
        #expect(state.compose.cursor == 9)
        _ = state.press(.alt("d"))
        #expect(String(state.compose.text) == "vote one  three")
        _ = state.press(.alt("f"))
        #expect(state.compose.cursor == 15)
        _ = state.press(.control("u"))
        #expect(state.compose.text.isEmpty)
    }

    /// A burst is counted in the toast, not hidden behind its last message (finding 8).
    @Test func aBurstIsCountedInTheToast() {
        var state = makeState()
        _ = state.reduce(.inbox(.received([entry(1, "World", "a")])))
        #expect(state.toast?.text == "Notification: a")
        _ = state.reduce(.inbox(.received([entry(2, "World", "b"), entry(3, "Sports", "c")])))
        #expect(state.toast?.text == "3 new: c")
        _ = state.reduce(.tick(state.now.addingTimeInterval(6)))
        _ = state.reduce(.inbox(.received([entry(4, "World", "d")])))
        #expect(state.toast?.text == "Notification: d", "a new toast once the last one is gone")
    }

    /// Keys typed while a send is under way are kept (issue 12, finding 2): the send takes
    /// only its own text out of the field; a failed send leaves everything.
    @Test func textTypedDuringASendIsKept() {
        var state = composing()
        _ = state.press(.escape, .character(" "), .up)
        _ = state.type("gamma")
        #expect(state.press(.enter).count == 1)
        _ = state.type("delta")
        _ = state.reduce(.sent(names.map { SendResultRow(category: .init($0), succeeded: true, detail: "id") }))
        #expect(String(state.compose.text) == "delta")
        #expect(state.compose.cursor == 5)

        _ = state.press(.enter)
        _ = state.type(" more")
        _ = state.reduce(.sent([SendResultRow(category: "World", succeeded: false, detail: "hub down")]))
        #expect(String(state.compose.text) == "delta more", "nothing leaves the field when the send failed")
    }

    @Test func categoryBoxesToggleAndOnlyCheckedOnesAreSent() {
        var state = composing()
        _ = state.type("news")
        _ = state.press(.down)
        #expect(state.compose.focus == .category(0))
        _ = state.press(
            .right, .right, .right, .right, .right, .right, .character(" "), .left, .left, .left, .left, .left, .left,
            .character(" "), .right, .right, .character(" "))
        #expect(state.compose.checked == [false, true, false, true, true, true])
        _ = state.press(.down)
        #expect(state.compose.focus == .send)
        _ = state.press(.enter)
        #expect(state.press(.enter) == [.send(text: "news", categories: ["Politics", "Technology", "Science", "Sports"])])
    }

    @Test func outsideTheFieldScreenKeysWork() {
        var state = composing()
        _ = state.press(.escape)
        #expect(!state.isEditingText)
        _ = state.press(.character("3"))
        #expect(state.screen == .log)
    }
}

struct LogReducerTests {
    static let items = (1...12).map { i in entry(i, names[i % 6], "news \(i)\(i == 7 ? " Goal" : "")") }
    /// The first ten read.
    static let read = Dictionary(uniqueKeysWithValues: names.map { ($0, 10) })

    @Test func newestFirstAndMoving() {
        var state = makeState(items: Self.items, read: Self.read, rows: 14)
        #expect(state.press(.character("3")) == [.changeReadMarks(.read(ReadMarks([12...12])))], "the newest is under the cursor")
        #expect(state.visibleLog.first?.text == "news 12")
        _ = state.press(.character("j"), .down)
        #expect(state.log.cursor == 2)
        _ = state.press(.character("G"))
        #expect(state.log.cursor == 11)
        #expect(state.log.top == 11 - state.logPageSize + 1, "the cursor stays on screen")
        _ = state.press(.character("g"))
        #expect(state.log.cursor == 0)
        #expect(state.log.top == 0)
        _ = state.press(.pageDown)
        #expect(state.log.cursor == state.logPageSize)
        _ = state.press(.up, .up, .up, .up, .up, .up, .up, .up, .up, .up, .up, .up)
        #expect(state.log.cursor == 0)
    }

    @Test func incrementalSearchAndMatches() {
        var state = makeState(items: Self.items, read: Self.read)
        _ = state.press(.character("3"), .character("/"))
        #expect(state.log.searching)
        _ = state.type("goa")
        #expect(state.visibleLog[state.log.cursor].text == "news 7 Goal")
        _ = state.press(.enter)
        #expect(!state.log.searching)
        _ = state.press(.character("g"))
        _ = state.press(.character("/"))
        _ = state.type("news 1")
        // news 12, 11, 10, 1: newest first.
        #expect(state.visibleLog[state.log.cursor].text == "news 12")
        _ = state.press(.enter, .character("n"))
        #expect(state.visibleLog[state.log.cursor].text == "news 11")
        _ = state.press(.character("N"), .character("N"))
        #expect(state.visibleLog[state.log.cursor].text == "news 1")
        _ = state.press(.character("/"))
        _ = state.type("zzz")
        _ = state.press(.escape)
        #expect(state.log.search.isEmpty)
        #expect(state.visibleLog[state.log.cursor].text == "news 1")
    }

    @Test func theCategoryPickerChoosesAndEscShowsAll() {
        var state = makeState(items: Self.items, read: Self.read)
        _ = state.press(.character("3"), .character("c"), .down, .enter)
        #expect(state.log.filter == "World")
        #expect(state.visibleLog.allSatisfy { $0.category == "World" })
        _ = state.press(.escape)
        #expect(state.log.filter == nil)
    }

    @Test func enterOpensTheWholeMessage() {
        var state = makeState(items: Self.items, read: Self.read)
        _ = state.press(.character("3"), .enter)
        #expect(state.dialog == Dialog(title: "Notification", message: "news 12", isError: false, entry: Self.items.last))
    }
}

struct ArrivalReducerTests {
    @Test func anArrivalElsewhereRaisesAToastAndBumpsCounters() {
        var state = makeState()
        #expect(state.reduce(.inbox(.received([entry(1, "World", "Breaking World News : hi")]))) == [])
        #expect(state.toast?.text == "Notification: Breaking World News : hi")
        #expect(state.unread == ["World": 1])
        #expect(state.unreadTotal == 1)
        _ = state.reduce(.tick(state.now.addingTimeInterval(6)))
        #expect(state.toast == nil)
    }

    @Test func onTheLogItIsShownUnreadUntilTheCursorGoesToIt() {
        var state = makeState(items: [entry(1, "World", "old")], read: ["World": 1])
        _ = state.press(.character("3"))
        #expect(state.reduce(.inbox(.received([entry(2, "Sports", "new")]))) == [])
        #expect(state.toast == nil)
        #expect(state.visibleLog.first.map(state.isUnread) == true)
        #expect(state.log.cursor == 0, "the cursor on the newest follows the newest, which stays unread")
        _ = state.press(.character("1"))
        #expect(state.unreadTotal == 1, "leaving the log reads nothing")
        _ = state.press(.character("3"))
        #expect(state.unreadTotal == 0, "landing on the log reads the newest, under the cursor")
    }

    @Test func connectionStates() {
        var state = makeState()
        _ = state.reduce(.inbox(.status(.reconnecting(seconds: 4, reason: "cut"))))
        #expect(state.reconnectAt == state.now.addingTimeInterval(4))
        _ = state.reduce(.inbox(.status(.online)))
        #expect(state.connection == .online)
        #expect(state.reconnectAt == nil)
        _ = state.reduce(.hubFailed("the local hub did not start"))
        #expect(state.connection == .offline(.unavailable("the local hub did not start")))
    }
}
