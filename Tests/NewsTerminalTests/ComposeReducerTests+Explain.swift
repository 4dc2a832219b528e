import BreakingNewsKit
import Testing

@testable import NewsTerminal

extension ComposeReducerTests {
    /// Issue 14: Enter on a send's result asks the hub why it reached whom it reached, and
    /// the answer shows in a dialog; on a failed row (issue 28, finding 6) it shows the whole
    /// error and its fix.
    @Test func enterOnASendResultExplainsIt() {
        var state = composing()
        _ = state.press(.down, .down)
        #expect(state.compose.focus == .send)
        _ = state.reduce(
            .sent([
                SendResultRow(category: "World", succeeded: true, detail: "n-1", notificationId: "n-1"),
                SendResultRow(
                    category: "Sports", succeeded: false, detail: "hub down", problem: "the hub answered 403: … Set X."),
            ]))
        #expect(state.compose.focus == .text, "after a send the keys are the message's again")
        _ = state.press(.down, .down, .down)
        #expect(state.compose.focus == .result(0))
        #expect(state.press(.enter) == [.explain(notificationId: "n-1", category: "World")])
        _ = state.press(.down)
        #expect(state.compose.focus == .result(1))
        #expect(state.press(.enter).isEmpty, "a failed send has no id to explain")
        #expect(state.dialog?.title == "Sports: not sent" && state.dialog?.message == "the hub answered 403: … Set X.")
        _ = state.press(.enter, .up, .up)
        #expect(state.compose.focus == .send)
        _ = state.reduce(.explained(title: "Why: World send", lines: ["Nothing matched.", "", "Send n-1"], failed: false))
        #expect(state.dialog?.title == "Why: World send" && state.dialog?.message == "Nothing matched.\n\nSend n-1")
    }
}
