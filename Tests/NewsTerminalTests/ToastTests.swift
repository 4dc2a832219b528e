import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

extension ComposeReducerTests {
    /// "Started the local hub" stays on the line after the messages that arrive while it
    /// shows (it was said for a moment only, then hidden by the send's own arrival); the news
    /// comes first, so a narrow screen cuts the notice, not the message. Other notes give way.
    @Test func theHubStartedNoticeFollowsWhatArrivesMeanwhile() {
        var state = makeState()
        _ = state.reduce(.hubStarted)
        _ = state.reduce(.inbox(.received([entry(1, "World", "a")])))
        #expect(state.toast?.text == "Notification: a · Started the local hub: it was not running")
        _ = state.reduce(.inbox(.received([entry(2, "World", "b")])))
        #expect(state.toast?.text == "2 new: b · Started the local hub: it was not running")
        _ = state.reduce(.tick(state.now.addingTimeInterval(6)))
        _ = state.reduce(.inbox(.received([entry(3, "World", "c")])))
        #expect(state.toast?.text == "Notification: c", "once it is gone, arrivals alone")
        _ = state.reduce(.actionDone("Copied the link"))
        _ = state.reduce(.inbox(.received([entry(4, "World", "d")])))
        #expect(state.toast?.text == "Notification: d", "any other note gives way to the news")
    }
}
