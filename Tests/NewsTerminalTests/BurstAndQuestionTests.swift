import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

/// Issue 45, finding 1: keys that came faster than typing are never commands; the keys that
/// change much at one press ask.
struct BurstTests {
    /// A log of `count` messages, World, none read.
    func log(_ count: Int) -> AppState {
        var state = makeState(items: (1...count).map { entry($0, "World", "message \($0)") })
        _ = state.press(.character("3"))
        return state
    }

    /// What a window holds that a key could change (what is stored is changed through these).
    struct Kept: Equatable {
        var screen: ScreenID
        var switches: Set<BreakingNewsKit.Category>
        var read: ReadMarks
        var deleted: ReadMarks
        var alerts: ArrivalAlerts
        var quitting: Bool
        var registering: Bool
    }

    func kept(_ state: AppState) -> Kept {
        Kept(
            screen: state.screen, switches: state.switches, read: state.readMarks, deleted: state.marks.deleted,
            alerts: state.alerts, quitting: state.quitting, registering: state.registering)
    }

    static let sentences = [
        "Fixed the bug with the undo, and quit", "This is the best news today", "Breaking: quake hits the coast\n",
        "line one\nAAA xxx zzz\nqqq\n", "sdbq",
    ]

    @Test(arguments: sentences)
    func aSentenceOnTheLogChangesNothing(sentence: String) {
        var state = log(40)
        let before = kept(state)
        #expect(state.press(.burst(sentence)) == [])
        #expect(kept(state) == before)
        let words = sentence.contains(" ") || sentence.contains("\n")
        #expect(state.toast?.text == (words ? AppState.pasteSetAside : AppState.keysSetAside))
    }

    @Test(arguments: sentences)
    func aSentenceOnCategoriesChangesNothing(sentence: String) {
        var state = makeState(selection: ["World"])
        let before = kept(state)
        #expect(state.press(.burst(sentence)) == [])
        #expect(kept(state) == before)
        #expect(state.categoryCursor == 0)
    }

    /// A burst while a box is open neither answers nor closes it.
    @Test func aBurstDoesNotAnswerAQuestion() {
        var state = makeState(selection: ["World"])
        _ = state.press(.character("j"), .character(" "), .character("q"))
        #expect(state.dialog?.isQuestion == true)
        #expect(state.press(.burst("yes\n")) == [])
        #expect(state.dialog?.isQuestion == true && !state.quitting)
    }

    /// A held key (the terminal's repeat) moves as the keys say; mixed keys do not.
    @Test func aHeldArrowKeyStillMoves() {
        var state = log(40)
        _ = state.press(.burst("jjjj"))
        #expect(state.log.cursor == 4)
        _ = state.press(.burst("jk"))
        #expect(state.log.cursor == 4)
        var categories = makeState()
        _ = categories.press(.burst("jjj"))
        #expect(categories.categoryCursor == 3)
    }

    /// A key that opens a text field, then text: the field takes the text.
    @Test func aFieldOpenedByTheFirstKeyTakesTheRest() {
        var state = log(5)
        _ = state.press(.burst("/message 3"))
        #expect(state.log.searching && state.log.search == "message 3")
        var piping = log(5)
        _ = piping.press(.burst("|wc -c\n"))
        #expect(piping.pipePrompt?.command == "wc -c", "the prompt runs only on a typed Enter")
        var composing = makeState()
        #expect(composing.press(.burst("2Storm warning\nroads closed")) == [])
        #expect(composing.screen == .compose && String(composing.compose.text) == "Storm warning\nroads closed")
    }

    /// In the message field, a burst is text; Enter after its last character is the key
    /// (typed ahead, it sends), a line break inside it is text.
    @Test func theMessageFieldTakesABurstAsText() {
        var state = makeState()
        _ = state.press(.character("2"))
        _ = state.press(.escape, .character(" "))
        #expect(state.compose.checked[0])
        #expect(state.press(.burst("one\ntwo\n")) == [])
        #expect(String(state.compose.text) == "one\ntwo\n" && !state.compose.sending)
        var ahead = makeState()
        _ = ahead.press(.character("2"), .escape, .character(" "), .up)
        #expect(ahead.press(.burst("Typed ahead\n")) == [.send(text: "Typed ahead", categories: ["World"])])
    }
}

struct RiskyKeyTests {
    /// `s` that would leave no category subscribed asks; Esc keeps the subscription.
    @Test func subscribingToNoCategoryAsks() {
        var state = makeState(selection: ["World"])
        _ = state.press(.character(" "))
        #expect(state.switches.isEmpty)
        #expect(state.press(.character("s")) == [])
        #expect(state.dialog?.title == "Subscribe to no category?")
        // A typed y (the end of "today") answers nothing: it says no.
        _ = state.type("y")
        #expect(state.dialog == nil && state.storedSelection == ["World"] && !state.registering)
        _ = state.press(.character("s"))
        _ = state.press(.escape)
        #expect(state.storedSelection == ["World"] && !state.registering)
        _ = state.press(.character("s"))
        #expect(state.press(.enter) == [.subscribe([])])
        #expect(state.storedSelection.isEmpty && state.registering)
        // With a category on, s asks nothing.
        var some = makeState()
        #expect(some.press(.character(" "), .character("s")) == [.subscribe(["World"])])
    }

    /// `A` on more unread messages than the screen shows asks; on a screenful it does not.
    @Test func markingMoreThanAScreenfulReadAsks() {
        var state = makeState(items: (1...40).map { entry($0, "World", "m\($0)") })
        _ = state.press(.character("3"))
        let unread = state.items.filter(state.isUnread).count
        #expect(state.press(.character("A")) == [])
        #expect(state.dialog?.title == "Mark \(unread) messages read?")
        _ = state.press(.character("n"))
        #expect(state.items.filter(state.isUnread).count == unread, "n marks nothing")
        // Typing is no answer: the l of "Always" after its A says no, and says so; its y
        // then copies (a Log key), and marks nothing.
        _ = state.type("Al")
        #expect(state.dialog == nil && state.toast?.text == "Not done: a question is answered with Enter")
        _ = state.type("ways")
        #expect(state.dialog == nil && state.items.filter(state.isUnread).count == unread)
        _ = state.press(.character("A"), .enter)
        #expect(state.items.allSatisfy { !state.isUnread($0) })
        var few = makeState(items: (1...3).map { entry($0, "World", "m\($0)") })
        _ = few.press(.character("3"), .character("A"))
        #expect(few.dialog == nil && few.items.allSatisfy { !few.isUnread($0) })
    }

    /// `"confirmQuit": true`: q asks even with nothing unsaved.
    @Test func confirmQuitMakesQAsk() {
        var state = makeState()
        state.confirmQuit = true
        #expect(state.press(.character("q")) == [])
        #expect(state.dialog?.title == "Quit Breaking News?" && !state.quitting)
        #expect(state.press(.character("q")) == [.quit])
    }

    /// `"letterKeys": false`: no single letter is a command; the named keys stay, and a letter
    /// the file binds is the user's own.
    @Test func letterKeysOffLeavesTheNamedKeys() {
        let config = UserConfig.parse(Data(#"{"letterKeys": false, "keys": {"quit": ["Ctrl-X", "Q"]}}"#.utf8), file: "c")
        #expect(config.problems.isEmpty)
        for letter in "abcdjkgGhlnNuAxzoysrq" {
            let command = ScreenID.allCases.compactMap { config.keyMap.command(for: .character(letter), on: $0) }
            #expect(command.isEmpty, "\(letter) is \(command)")
        }
        #expect(config.keyMap.command(for: .down, on: .log) == .down)
        #expect(config.keyMap.command(for: .delete, on: .log) == .delete)
        #expect(config.keyMap.command(for: .character("/"), on: .log) == .search)
        #expect(config.keyMap.command(for: .character("Q"), on: .log) == .quit)
        #expect(config.keyMap.command(for: .control("x"), on: .categories) == .quit)
        #expect(config.keyMap.helpLines.contains { $0.label == "Del" && $0.summary.hasPrefix("delete the message") })
        var state = makeState(items: [entry(1, "World", "one")])
        state.keyMap = config.keyMap
        _ = state.press(.character("3"), .character("x"), .character("q"))
        #expect(state.items.count == 1 && !state.quitting)
        let refused = UserConfig.parse(Data(#"{"letterKeys": 0, "confirmQuit": "yes"}"#.utf8), file: "c")
        #expect(refused.problems == ["c: confirmQuit: must be true or false", "c: letterKeys: must be true or false"])
        #expect(UserConfig.parse(Data(#"{"confirmQuit": true}"#.utf8), file: "c").confirmQuit)
    }
}

extension ComposeReducerTests {
    @Test func allOrNoneAndTheRefusals() {
        var state = composing()
        _ = state.press(.enter)
        #expect(state.compose.error?.contains("empty") == true)
        _ = state.type(String(repeating: "é", count: 513))
        #expect(state.press(.enter) == [])
        #expect(state.compose.error?.contains("1024") == true)
        _ = state.press(.control("u"))
        _ = state.type("ok")
        _ = state.press(.escape)
        #expect(state.compose.checked == Array(repeating: false, count: 6))
        _ = state.press(.down)
        #expect(state.press(.enter) == [])
        #expect(state.compose.error?.contains("category") == true)
        _ = state.press(.up, .right, .right, .right, .right, .right, .right, .character(" "))
        #expect(state.compose.checked == Array(repeating: true, count: 6), "Space on [All] checks all six")
        _ = state.press(.character(" "))
        #expect(state.compose.checked == Array(repeating: false, count: 6), "and again, none")
    }

    /// Issue 45, finding 2: on the category row a letter is text, not a command: "hello all"
    /// loses no h to the cursor, checks nothing, and "quake hits" does not quit.
    @Test func lettersOnTheCategoryRowGoIntoTheMessage() {
        var state = composing()
        _ = state.press(.escape, .right)
        #expect(state.compose.focus == .category(1))
        let footer = rendered(state).lines[state.rows - 1]
        #expect(footer.hasPrefix(" ←/→ box  Space check  Enter send") && !footer.contains("q quit"), "\(footer)")
        _ = state.type("hello all")
        #expect(String(state.compose.text) == "hello all")
        #expect(state.compose.focus == .text, "the first letter moved the focus back to the message")
        #expect(state.compose.checked == Array(repeating: false, count: 6))
        _ = state.press(.down)
        #expect(state.type("quake hits").isEmpty)
        #expect(!state.quitting)
        #expect(String(state.compose.text) == "hello allquake hits")
        _ = state.press(.down, .down)
        #expect(state.compose.focus == .send)
        _ = state.type("q")
        #expect(!state.quitting && String(state.compose.text) == "hello allquake hitsq", "on Send too")
    }
}

/// What the review of issue 45 found: keys acting out of sight, and screens naming keys that
/// `"letterKeys": false` took away.
struct OutOfSightKeyTests {
    /// On "Terminal too small" a key acts on nothing hidden; q quits.
    @Test func aTooSmallScreenTakesOnlyQ() {
        var state = makeState(items: (1...30).map { entry($0, "World", "m\($0)") }, rows: 14, columns: 50)
        _ = state.press(.character("3"))
        state.rows = 12
        state.columns = 40
        let before = state
        #expect(state.press(.character("x"), .character("A"), .character("u"), .character("j")) == [])
        #expect(state == before, "nothing out of sight changed")
        #expect(state.press(.character("q")) == [.quit])
    }

    /// A held key set aside says so, not that it was a paste.
    @Test func aHeldKeySetAsideIsNotCalledAPaste() {
        var state = makeState(items: [entry(1, "World", "one")])
        _ = state.press(.character("3"))
        #expect(state.press(.burst("xxxx")) == [])
        #expect(state.items.count == 1 && state.toast?.text == AppState.keysSetAside)
    }

    /// With the letters off, no line names a letter that does nothing.
    @Test func withoutLetterKeysNoLineNamesALetter() {
        var state = makeState(items: [entry(1, "World", "one")])
        state.keyMap = KeyMap.standard.withoutLetterKeys
        #expect(state.alertsLine == "Alerts: off")
        _ = state.press(.character(" "))
        #expect(rendered(state).text.contains("Unsaved changes: press Subscribe to store and register them."))
        _ = state.press(.character("3"), .delete)
        #expect(state.toast?.text == "Deleted “one”")
        var standard = makeState()
        #expect(standard.alertsLine == "Alerts: off  (b bell, d desktop)")
        _ = standard.press(.character("b"))
        #expect(standard.alertsLine == "Alerts: bell  (b, d)")
    }
}

extension BurstTests {
    /// A paste near the longest the terminal hands over (16,384 keys), as searches one after
    /// another: each line a search of its own, and the last one is the search left open.
    @Test func aPasteOfThousandsOfSearchesEndsOnTheLast() {
        var state = log(3)
        let lines = Array(repeating: "/message 2", count: 1_489) + ["/message 3"]
        _ = state.press(.burst(lines.joined(separator: "\n")))
        #expect(state.log.searching && state.log.search == "message 3")
    }
}
