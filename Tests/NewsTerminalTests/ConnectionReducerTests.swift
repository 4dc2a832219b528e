import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

/// The hub's connection as the window shows it, and `r`, which tries again at once.
struct ConnectionReducerTests {
    @Test func rTriesTheHubAgainNow() {
        var state = makeState()
        #expect(state.press(.character("r")) == [], "already connecting")
        _ = state.reduce(.inbox(.status(.online)))
        #expect(state.press(.character("r")) == [], "online: nothing to try")
        _ = state.reduce(.inbox(.status(.reconnecting(seconds: 1, reason: "the stream was cut"))))
        #expect(Layout.connectionText(state).0 == "◌ reconnecting in 1 s (r: now)")
        #expect(state.press(.character("r")) == [.reconnect(startingHub: true)])
        #expect(state.connection == .connecting)
        #expect(state.reconnectAt == nil)
        #expect(state.press(.character("r")) == [], "one try at a time")
        // A hub that could not be settled at all is tried again too.
        _ = state.reduce(.hubFailed("port 47474 is held by nginx (pid 7), which is not a local hub"))
        #expect(Layout.connectionText(state).0.hasPrefix("○ offline (r: retry): port 47474"))
        #expect(state.press(.character("r")) == [.reconnect(startingHub: true)])
        // In the message field, r is a letter.
        _ = state.reduce(.inbox(.status(.reconnecting(seconds: 1, reason: "the stream was cut"))))
        _ = state.press(.character("2"))
        #expect(state.press(.character("r")) == [])
        #expect(String(state.compose.text).hasSuffix("r"))
    }
}
