import Foundation
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

/// The bell and desktop notification on arrival (issue 12), in the real UI inside tmux.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct ArrivalAlertEndToEndTests {
    /// Off by default; `b` and `d` switch them, the categories screen says so, defaults.json
    /// keeps them, another window of the home follows and a restart keeps them. Switched on,
    /// news that arrives reaches the terminal as a bell and as OSC 9 and OSC 777, wrapped for
    /// tmux's passthrough, its text defused.
    @Test func arrivalAlertsAreSwitchedAndKept() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            let subscribed = try await user.run(["subscribe", "World"])
            #expect(subscribed.status == 0, "\(subscribed.stderr)")
            let defaultsFile = user.home.appendingPathComponent("config/defaults.json")
            let client = try HubClient(connectionString: hub.full)
            func send(_ text: String) async throws {
                _ = try await client.send(.template(["messageParam": "Breaking World News : \(text)"]), tagExpression: "World")
            }

            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("one", of: user, hub: hub.listen)
            // Everything the UI writes to its terminal, byte for byte.
            let raw = user.home.appendingPathComponent("pane-one.raw")
            try await tmux.run(["pipe-pane", "-o", "-t", "one", "cat >> '\(raw.path)'"])
            var screen = try await tmux.waitFor("one") { $0.contains("Alerts: off  (b bell, d desktop)") }

            // Off: news arrives without a bell or a notification.
            try await send("quiet")
            try await tmux.waitFor("one") { $0.contains("Notification: Breaking World News : quiet") }
            var written = (try? String(contentsOf: raw, encoding: .utf8)) ?? ""
            #expect(!written.contains("]9;") && !written.contains("]777;") && !written.contains("\u{07}"))

            try await tmux.keys("one", "b")
            try await tmux.waitFor("one") { $0.contains("Alerts: bell  (b, d)") }
            try await tmux.keys("one", "d")
            screen = try await tmux.waitFor("one") { $0.contains("Alerts: bell, desktop  (b, d)") }
            #expect(screen.contains("Desktop notification on new messages: on"))
            try await eventually("both alerts on in the defaults", every: .milliseconds(50)) {
                (try? String(contentsOf: defaultsFile, encoding: .utf8))?.contains(
                    #""arrivalAlerts":{"bell":true,"desktop":true}"#) == true
            }
            let defaults = try String(contentsOf: defaultsFile, encoding: .utf8)
            #expect(defaults.contains(#""BreakingNewsCategories":["World"]"#), "the other defaults stay")

            // News that tries to end the notification early (a C1 OSC and ';') stays its text.
            try await send("calm; \u{9D}52;c;ZWNobyBvd25lZA==\u{9C} end")
            try await tmux.waitFor("one") { $0.contains("Notification: Breaking World News : calm;") }
            let body = "Breaking World News : calm, 52,c,ZWNobyBvd25lZA== end"
            let e = "\u{1B}"
            let expected =
                "\(e)Ptmux;\(e)\(e)]9;\(body)\u{07}\(e)\\" + "\(e)Ptmux;\(e)\(e)]777;notify;Breaking News;\(body)\u{07}\(e)\\"
                + "\u{07}"
            try await eventually("the notification's sequences on the terminal", every: .milliseconds(50)) {
                (try? String(contentsOf: raw, encoding: .utf8))?.contains(expected) == true
            }
            written = try String(contentsOf: raw, encoding: .utf8)
            #expect(!written.unicodeScalars.contains("\u{9D}"), "no C1 control reaches the terminal")
            // The taste of the desktop notification when switched on, and "calm": "quiet" had none.
            #expect(written.components(separatedBy: "]9;").count - 1 == 2)

            // A second window of the home shows them on; switching one there moves the first.
            try await tmux.startUI("two", of: user, hub: hub.listen)
            try await tmux.waitFor("two") { $0.contains("Alerts: bell, desktop  (b, d)") }
            try await tmux.keys("two", "d")
            try await tmux.waitFor("two") { $0.contains("Alerts: bell  (b, d)") }
            try await tmux.waitFor("one", timeout: 10) { $0.contains("Alerts: bell  (b, d)") }

            // Quit and start again: kept.
            try await tmux.keys("one", "q")
            let ended = try await tmux.waitFor("one") { $0.contains("exit=") }
            #expect(ended.contains("exit=0"))
            try await tmux.startUI("three", of: user, hub: hub.listen)
            try await tmux.waitFor("three") { $0.contains("Alerts: bell  (b, d)") }
        }
    }

    /// A home subscribed to World on `hub` whose defaults.json has the desktop notification on
    /// and the bell off, and two windows of it in `tmux`, each writing what it draws to
    /// `pane-<session>.raw` in the home.
    func twoWindowsWithDesktopOn(_ hub: HubProcess, _ tmux: Tmux) async throws -> Command {
        let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
        let subscribed = try await user.run(["subscribe", "World"])
        #expect(subscribed.status == 0, "\(subscribed.stderr)")
        let defaultsFile = user.home.appendingPathComponent("config/defaults.json")
        var defaults = try JSONSerialization.jsonObject(with: Data(contentsOf: defaultsFile)) as? [String: Any] ?? [:]
        defaults["arrivalAlerts"] = ["bell": false, "desktop": true]
        try JSONSerialization.data(withJSONObject: defaults).write(to: defaultsFile)
        for session in ["ui1", "ui2"] {
            try await tmux.startUI(session, of: user, hub: hub.listen)
            let raw = user.home.appendingPathComponent("pane-\(session).raw")
            try await tmux.run(["pipe-pane", "-o", "-t", session, "cat >> '\(raw.path)'"])
            try await tmux.waitFor(session) { $0.contains("Alerts: desktop  (b, d)") }
        }
        return user
    }

    /// The bell switched in one window and the desktop notification in another, at once:
    /// both switches hold, in both windows and in defaults.json (a window stored the pair as
    /// it last saw it, and the last one undid the other's switch).
    @Test func switchesMadeInTwoWindowsBothHold() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let tmux = Tmux()
            defer { tmux.killServer() }
            let user = try await twoWindowsWithDesktopOn(hub, tmux)
            try await tmux.keys("ui1", "b")
            try await tmux.keys("ui2", "d")
            try await tmux.waitFor("ui1") { $0.contains("Bell on new messages: on") }
            for session in ["ui1", "ui2"] {
                try await tmux.waitFor(session, timeout: 10) { $0.contains("Alerts: bell  (b, d)") }
            }
            let defaultsFile = user.home.appendingPathComponent("config/defaults.json")
            try await eventually("the bell alone on in the defaults", every: .milliseconds(50)) {
                (try? String(contentsOf: defaultsFile, encoding: .utf8))?.contains(
                    #""arrivalAlerts":{"bell":true,"desktop":false}"#) == true
            }
        }
    }

    /// Two windows of a home with the desktop notification on: each message is one
    /// notification, from whichever window claims it first, not one per window.
    @Test func oneNotificationPerMessagePerHome() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let tmux = Tmux()
            defer { tmux.killServer() }
            let user = try await twoWindowsWithDesktopOn(hub, tmux)
            let client = try HubClient(connectionString: hub.full)
            func notifications() -> Int {
                ["ui1", "ui2"].reduce(0) { count, session in
                    let raw = user.home.appendingPathComponent("pane-\(session).raw")
                    return count + ((try? String(contentsOf: raw, encoding: .utf8)) ?? "").components(separatedBy: "]9;").count
                        - 1
                }
            }
            for (n, text) in ["first", "second"].enumerated() {
                _ = try await client.send(.template(["messageParam": "Breaking World News : \(text)"]), tagExpression: "World")
                for session in ["ui1", "ui2"] {
                    try await tmux.waitFor(session) { $0.contains("Breaking World News : \(text)") }
                }
                try await eventually("notification \(n + 1)", every: .milliseconds(50)) { notifications() >= n + 1 }
                // Time for a second window's notification to show, were there one; past the
                // two seconds that alerts keep apart.
                try await Task.sleep(nanoseconds: 3_000_000_000)
                #expect(notifications() == n + 1, "message \(n + 1)")
            }
        }
    }
}
