import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import TestTiers
import Testing

/// The terminal UI driven in tmux as a user drives it: keys in, screens read back.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct TerminalUITests {
    @Test func subscribeInOneTerminalReceiveWhatAnotherSends() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let tmux = Tmux()
            defer { tmux.killServer() }
            let binary = builtBinary().path
            let homeA = Command.freshHome().home.path
            let homeB = Command.freshHome().home.path
            try await tmux.start(
                session: "A", command: binary,
                environment: [
                    "BREAKING_NEWS_HOME": homeA, "BREAKING_NEWS_CONNECTION_STRING": hub.listen.description, "TERM": "screen",
                ])
            // A new terminal: the hub knows nothing of it until it subscribes.
            var screen = try await tmux.waitFor("A") { $0.contains("○ not registered: news is not reaching") }
            #expect(screen.contains(" ▸ [ OFF ] World"))

            // Toggle World and Sports, then subscribe.
            try await tmux.keys("A", "Space")
            try await tmux.keys("A", "j", "j", "j", "j", "j")
            try await tmux.keys("A", "Space")
            try await tmux.keys("A", "s")
            screen = try await tmux.waitFor("A") { $0.contains("✓ Registered World, Sports") }
            // Registered, its stream opens at once.
            screen = try await tmux.waitFor("A") { $0.contains("● online") && $0.contains("✓ Registered World, Sports") }
            #expect(screen.contains("[  ON ] World"))
            #expect(screen.contains("[  ON ] Sports"))
            let defaults = try String(contentsOfFile: homeA + "/config/defaults.json", encoding: .utf8)
            #expect(defaults.contains(#""BreakingNewsCategories":["World","Sports"]"#))
            let installationFile = homeA + "/data/installation.json"
            let installationId = try #require(
                try JSONValue(parsing: String(contentsOfFile: installationFile, encoding: .utf8))["installationId"]?.stringValue)
            let installation = try await HubClient(connectionString: hub.listen).installation(id: installationId)
            #expect(installation.tags == ["World", "Sports"])
            #expect(installation.templates?["simpleAPNSTemplate"]?.body == #"{"aps":{"alert":"$(messageParam)"}}"#)

            // A second terminal composes breaking news for World only and sends it.
            try await tmux.start(
                session: "B", command: binary,
                environment: [
                    "BREAKING_NEWS_HOME": homeB, "BREAKING_NEWS_CONNECTION_STRING": hub.full.description, "TERM": "screen",
                ])
            try await tmux.waitFor("B") { $0.contains("○ not registered: news is not reaching") }
            try await tmux.keys("B", "2")
            try await tmux.type("B", "Earthquake drill at noon")
            try await tmux.keys("B", "Escape", "Space", "Up")
            screen = try await tmux.waitFor("B") { $0.contains("[x] World   [ ] Politics") }
            try await tmux.keys("B", "Enter")
            screen = try await tmux.waitFor("B") { $0.contains("✓ sent") }
            #expect(!screen.contains("Politics    ✓"))

            // The first terminal shows the toast and the log entry.
            screen = try await tmux.waitFor("A") { $0.contains("▶ Notification: Breaking World News : Earthquake drill at noon") }
            #expect(screen.contains("3 Log (1)"))
            try await tmux.keys("A", "3")
            screen = try await tmux.waitFor("A") { $0.contains("World       Earthquake drill at noon") }
            #expect(screen.contains(" ● "))

            // Resizing to 40×12 and back leaves no garbage.
            let before = screen
            try await tmux.resize("A", columns: 40, rows: 12)
            screen = try await tmux.waitFor("A") { $0.contains("Terminal too small") }
            #expect(screen.contains("(40×12; needs 50×14)"))
            try await tmux.resize("A", columns: 100, rows: 30)
            screen = try await tmux.waitFor("A") { $0.contains("World       Earthquake drill at noon") }
            #expect(!screen.contains("too small"))
            #expect(screen.split(separator: "\n").first == before.split(separator: "\n").first)
            #expect(Array(screen.split(separator: "\n").dropFirst(3)) == Array(before.split(separator: "\n").dropFirst(3)))

            // q quits with status 0 and gives the terminal back.
            try await tmux.keys("A", "q")
            screen = try await tmux.waitFor("A") { $0.contains("exit=") }
            #expect(screen.contains("exit=0"))
            #expect(!screen.contains("Breaking News"))
            try await tmux.keys("B", "Tab", "q")
            let ended = try await tmux.waitFor("B") { $0.contains("exit=") }
            #expect(ended.contains("exit=0"))
        }
    }

    @Test func ctrlCAlsoRestoresTheTerminal() async throws {
        let tmux = Tmux()
        defer { tmux.killServer() }
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        try await tmux.startUIOnItsOwnHub("C", of: user, extra: ["NO_COLOR": "1"])
        try await tmux.keys("C", "C-c")
        let screen = try await tmux.waitFor("C") { $0.contains("exit=") }
        #expect(screen.contains("exit=0"))
        #expect(!screen.contains("Categories"))
    }

    /// The UI on its own embedded hub: a hub that crashed comes back by itself and the UI is
    /// online on it again (a hub stopped with `hub stop`: StoppedHubEndToEndTests).
    @Test func theUIRestartsACrashedHub() async throws {
        let tmux = Tmux()
        defer { tmux.killServer() }
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        try await tmux.startUIOnItsOwnHub("R", of: user)
        let subscribed = try await user.run(["subscribe", "World"])
        #expect(subscribed.status == 0, "\(subscribed.stderr)")
        let stateFile = user.home.appendingPathComponent("data/hub/\(LocalHubState.fileName)")
        let crashed = try #require(LocalHubState.read(stateFile))

        // A crash: hub.json outlives its process. The open UI starts a hub of its own again.
        kill(crashed.pid, SIGKILL)
        let deadline = Date().addingTimeInterval(20)
        var restarted: LocalHubState?
        while Date() < deadline {
            if let state = LocalHubState.read(stateFile), state.pid != crashed.pid, LocalProcess.isAlive(state.pid) {
                restarted = state
                break
            }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        let hub = try #require(restarted, "no hub came back after the crash")
        try await tmux.waitFor("R") { $0.contains("● online") }
        let sent = try await user.run(["send", "Back after the crash", "--category", "World"])
        #expect(sent.status == 0, "\(sent.stderr)")
        try await tmux.waitFor("R") { $0.contains("Notification: Breaking World News : Back after the crash") }
        #expect(LocalHubState.read(stateFile)?.pid == hub.pid, "the send found the restarted hub")
    }
}
