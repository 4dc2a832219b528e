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

/// Issue 45: `unregister` in another process reaches the open window.
struct UnregisteredHomeTests {
    @Test func anUnregisteredHomeIsSaidInTheHeaderAndReceivedAgain() {
        var state = makeState()
        let record = RegistrationRecord(state: .registered, at: "2026-11-21T10:00:00Z", categories: ["World"], hub: "h")
        _ = state.reduce(.registration(record, userInitiated: false))
        _ = state.reduce(.inbox(.status(.online)))
        state.hub = "breakingnews @ 127.0.0.1:47474"
        #expect(Layout.connectionText(state).0 == "● online")
        // The home's registration is gone: the stream the hub sends nothing to is replaced.
        let effects = state.reduce(.shared(SharedHomeState(selection: [], registration: nil)))
        #expect(effects == [.followIdentity])
        #expect(state.connection == .offline(.notRegistered))
        let header = rendered(state).lines[0]
        #expect(header.hasSuffix("○ not registered: news is not reaching this terminal"), "\(header)")
        // Nothing more is asked while it stays so; a registration made elsewhere opens it.
        #expect(state.reduce(.shared(SharedHomeState(selection: [], registration: nil))) == [])
        #expect(state.reduce(.shared(SharedHomeState(selection: [], registration: record))) == [.reconnect(startingHub: false)])
        // A home that was never registered asks nothing either.
        var fresh = makeState()
        #expect(fresh.reduce(.shared(SharedHomeState(selection: [], registration: nil))) == [])
    }
}
