import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import Testing

/// Issue 28, findings 3 and 10: the local hub is the user's. A window says when it was
/// stopped and `r` starts it, for every window of the home; a send starts it too and says so;
/// `log --follow` says why it waits, and comes back with the hub.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct StoppedHubEndToEndTests {
    static let stopped = "○ local hub stopped (r: start it)"

    /// Finding 3: after `hub stop`, both windows say so; `r` in one starts the hub and both
    /// are online again.
    @Test func afterHubStopRStartsItAndEveryWindowIsOnlineAgain() async throws {
        let tmux = Tmux()
        defer { tmux.killServer() }
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        // A subscribed home: the hub streams only to a terminal it knows.
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        for window in ["one", "two"] {
            let screen = try await tmux.startUIOnItsOwnHub(window, of: user)
            #expect(screen.contains("● online"), "\(screen)")
        }
        let stopped = try await user.run(["hub", "stop"])
        #expect(stopped.stdout.hasPrefix("stopped the local hub"), "\(stopped.stderr)")
        for window in ["one", "two"] {
            let screen = try await tmux.waitFor(window) { $0.contains(Self.stopped) }
            #expect(screen.contains("Hub: the local hub was stopped"), "\(screen)")
        }
        try await tmux.keys("one", "r")
        // The window that started it says so.
        try await tmux.waitFor("one", timeout: 30) { $0.contains("Started the local hub") }
        for window in ["one", "two"] { try await tmux.waitFor(window, timeout: 30) { $0.contains("● online") } }
        #expect(try await user.run(["hub", "status"]).status == 0)
        // And the news flows to both again.
        #expect(try await user.run(["send", "back on", "--category", "World"]).status == 0)
        // Its toast, or once that is gone (a few seconds; a busy machine may look late), the
        // unread count of the one message this home has had.
        for window in ["one", "two"] {
            try await tmux.waitFor(window) {
                $0.contains("Notification: Breaking World News : back on") || $0.contains("3 Log (1)")
            }
        }
    }

    /// Finding 3, for a home that never subscribed (the hub does not stream to it yet): the
    /// window still says within seconds that the hub was stopped, and `r` starts it again.
    @Test func aWindowNotYetSubscribedSaysTheHubWasStopped() async throws {
        let tmux = Tmux()
        defer { tmux.killServer() }
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        let first = try await tmux.startUIOnItsOwnHub("n", of: user)
        #expect(first.contains("○ not registered: news is not reaching"), "\(first)")
        #expect(try await user.run(["hub", "stop"]).status == 0)
        // Well under the 60 s a window once waited between tries while not registered.
        try await tmux.waitFor("n", timeout: 20) { $0.contains(Self.stopped) }
        try await tmux.keys("n", "r")
        try await tmux.waitFor("n", timeout: 30) { $0.contains("○ not registered: news is not reaching") }
        #expect(try await user.run(["hub", "status"]).status == 0)
    }

    /// Finding 3: a send from a window starts a stopped hub, and the screen says so.
    @Test func aSendStartsAStoppedHubAndTheScreenSaysSo() async throws {
        let tmux = Tmux()
        defer { tmux.killServer() }
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        let started = try await tmux.startUIOnItsOwnHub("s", of: user)
        #expect(started.contains("● online"), "\(started)")
        #expect(try await user.run(["hub", "stop"]).status == 0)
        try await tmux.waitFor("s") { $0.contains(Self.stopped) }
        try await tmux.keys("s", "2")
        try await tmux.type("s", "Started by a send")
        try await tmux.keys("s", "Escape")
        try await tmux.keys("s", "Space")
        try await tmux.keys("s", "Enter")
        let screen = try await tmux.waitFor("s", timeout: 30) { $0.contains("Started the local hub") }
        #expect(!screen.contains("✗ failed"), "\(screen)")
        try await tmux.waitFor("s", timeout: 30) { $0.contains("✓ sent") && $0.contains("● online") }
    }

    /// Finding 10: `log --follow` says the hub is not running (not "lost the hub … retrying"
    /// for ever), waits, and is back with the hub a send starts.
    @Test func followSaysTheHubIsNotRunningAndComesBackWithIt() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "Science"]).status == 0)
        let follow = try user.start(["log", "--follow"])
        defer { follow.stop() }
        #expect(try await user.run(["send", "before", "--category", "Science"]).status == 0)
        // (Closures are bound before #expect: inside it, a closure can be mistaken for a later one.)
        let before = await follow.waitFor { out, _ in out.contains("Breaking Science News : before") }
        #expect(before)
        #expect(try await user.run(["hub", "stop"]).status == 0)
        let waiting = await follow.waitFor { _, err in err.contains("the local hub is not running; waiting for it to start") }
        #expect(waiting, "\(follow.stderr)")
        #expect(!follow.stderr.contains("lost the hub"), "said why, not 'retrying' for ever: \(follow.stderr)")
        #expect(try await user.run(["send", "after", "--category", "Science"]).status == 0)
        let after = await follow.waitFor(timeout: 30) { out, _ in out.contains("Breaking Science News : after") }
        #expect(after, "\(follow.stderr)")
        #expect(follow.stderr.contains("connected to the hub"), "\(follow.stderr)")
    }
}
