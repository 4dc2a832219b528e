import BreakingNewsKit
import Testing

@testable import NewsTerminal

extension ComposeReducerTests {
    /// Issue 28, finding 1: text that came at once with a line break inside (a paste the
    /// terminal did not bracket) is text on Compose, wherever the focus was, and never sends;
    /// elsewhere its keys count one by one.
    @Test func aBurstIsTextOnComposeAndKeysElsewhere() {
        var state = composing()
        _ = state.press(.escape)
        #expect(state.press(.burst("line one\nline two")) == [])
        #expect(String(state.compose.text) == "line one\nline two")
        #expect(state.compose.focus == .text && !state.compose.sending)
        var log = makeState(items: [entry(1, "World", "one"), entry(2, "World", "two")])
        _ = log.press(.character("3"), .character("/"))
        _ = log.press(.burst("one\n/tw"))
        #expect(log.log.search == "tw", "Enter kept the first search, / began the next")
        #expect(log.log.searching)
    }
}

struct QuitQuestionTests {
    /// Issue 28, finding 7: q with category changes not subscribed asks; Esc stays, q (or
    /// Enter) on the question quits; without changes q quits at once.
    @Test func quittingWithUnsubscribedChangesAsks() {
        var state = makeState(selection: ["World"])
        #expect(state.press(.character("j"), .character(" ")) == [])
        #expect(state.press(.character("q")) == [])
        #expect(state.dialog?.title == "Quit without subscribing?")
        #expect(state.dialog?.message.contains("Politics on") == true)
        #expect(!state.quitting)
        _ = state.press(.escape)
        #expect(state.dialog == nil && !state.quitting)
        _ = state.press(.character("q"))
        #expect(state.press(.character("q")) == [.quit])
        #expect(state.quitting)
        var unchanged = makeState(selection: ["World"])
        #expect(unchanged.press(.character("q")) == [.quit])
    }
}
