import BreakingNewsKit
import Testing

@testable import NewsTerminal

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
