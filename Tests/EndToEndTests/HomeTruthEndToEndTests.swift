import Foundation
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

/// Issue 45, "every window tells the truth": two windows and a follower on one home, the
/// built binary on the home's own hub, in tmux.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct HomeTruthEndToEndTests {
    /// After `unregister` every window stops saying "● online" (within 10 s) and the follower
    /// says so once and keeps following; a subscribe brings them all back.
    @Test func unregisterReachesEveryWindowAndFollower() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        let tmux = Tmux()
        defer { tmux.killServer() }
        try await tmux.startUIOnItsOwnHub("a", of: user)
        try await tmux.startUIOnItsOwnHub("b", of: user)
        try await tmux.keys("b", "3")
        let follow = try user.start(["log", "--follow"])
        defer { follow.stop() }
        #expect(try await user.run(["send", "before", "--category", "World"]).status == 0)
        #expect(await follow.waitFor { out, _ in out.contains("Breaking World News : before") }, "\(follow.stderr)")

        let unregistered = try await user.run(["unregister"])
        #expect(unregistered.status == 0, "\(unregistered.stderr)")
        for window in ["a", "b"] {
            let screen = try await tmux.waitFor(window, timeout: 10) {
                $0.contains("○ not registered: news is not reaching this terminal") && !$0.contains("● online")
            }
            #expect(!screen.contains("● online"), "\(screen)")
        }
        let said = "not registered: news is not reaching this terminal"
        #expect(await follow.waitFor(timeout: 10) { _, err in err.contains(said) }, "\(follow.stderr)")
        #expect(follow.stderr.components(separatedBy: said).count == 2, "said once: \(follow.stderr)")
        #expect(follow.child.isRunning)

        // Registered again: every window is online, the follower says so and gets the news.
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        for window in ["a", "b"] { try await tmux.waitFor(window, timeout: 20) { $0.contains("● online") } }
        #expect(
            await follow.waitFor(timeout: 20) { _, err in err.contains("registered again: news reaches this terminal") },
            "\(follow.stderr)")
        #expect(try await user.run(["send", "after", "--category", "World"]).status == 0)
        #expect(await follow.waitFor { out, _ in out.contains("Breaking World News : after") }, "\(follow.stderr)")
    }

    /// A defaults.json corrupted while a window is open: the window shows the switches its
    /// box says were restored, and `s` there keeps them (on the hub and in the file).
    @Test func aCorruptDefaultsFileShowsAndKeepsTheRestoredSwitches() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World", "Sports"]).status == 0)
        let tmux = Tmux()
        defer { tmux.killServer() }
        try await tmux.startUIOnItsOwnHub("ui", of: user)
        try await tmux.waitFor("ui") { $0.contains("✓ Registered World, Sports") }
        let defaults = user.home.appendingPathComponent("config/defaults.json")
        try Data("garbage{".utf8).write(to: defaults)
        let screen = try await tmux.waitFor("ui", timeout: 10) { $0.contains("A file could not be read") }
        #expect(Self.box(screen).contains("every value was restored from defaults.backup.json"), "\(screen)")
        #expect(screen.contains("[  ON ] World") && screen.contains("[  ON ] Sports"), "\(screen)")
        try await tmux.keys("ui", "Enter")
        try await tmux.waitFor("ui") { !$0.contains("A file could not be read") }
        // The registration line says when: a second later, s gives it another time, which
        // stays on screen (the toast saying so lasts five seconds, which a loaded machine can
        // let pass between two captures).
        func registered(_ screen: String) -> String? {
            screen.split(separator: "\n").first { $0.contains("✓ Registered") }.map(String.init)
        }
        let before = registered(try await tmux.capture("ui"))
        try await Task.sleep(nanoseconds: 1_100_000_000)
        try await tmux.keys("ui", "s")
        let subscribed = try await tmux.waitFor("ui", timeout: 30) {
            $0.contains("✓ Subscribed: news for") || (registered($0) != nil && registered($0) != before)
        }
        #expect(
            !subscribed.contains("✓ Subscribed") || subscribed.contains("✓ Subscribed: news for World, Sports"), "\(subscribed)")
        #expect(registered(subscribed)?.contains("✓ Registered World, Sports") == true, "\(subscribed)")
        let kept = try String(contentsOf: defaults, encoding: .utf8)
        #expect(kept.contains(#""BreakingNewsCategories":["World","Sports"]"#), "\(kept)")
        let installation = try await user.run(["installation"])
        let tags = try JSONValue(parsing: installation.stdout)["tags"]
        #expect(tags == .strings(["World", "Sports"]), "\(installation.stdout)")
    }

    /// Both alerts on and `log --keep-days 5`, then defaults.json corrupted while a window is
    /// open: the window shows the box a new window would (what was set aside, what was
    /// restored), its Alerts line still says bell and desktop, and the file holds the alerts
    /// and the days again.
    @Test func aCorruptDefaultsFileKeepsTheAlertsAndTheDaysKept() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World", "Sports"]).status == 0)
        #expect(try await user.run(["log", "--keep-days", "5"]).status == 0)
        let tmux = Tmux()
        defer { tmux.killServer() }
        try await tmux.startUIOnItsOwnHub("ui", of: user)
        try await tmux.keys("ui", "b", "d")
        try await tmux.waitFor("ui") { $0.contains("Alerts: bell, desktop") }
        let defaults = user.home.appendingPathComponent("config/defaults.json")
        func stored() throws -> JSONValue { try JSONValue(parsing: Data(contentsOf: defaults)) }
        // The switches are stored after the frame that shows them.
        for _ in 0..<50 where (try? stored())?["arrivalAlerts"]?["desktop"] != .bool(true) {
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        #expect(try stored()["arrivalAlerts"] == .object([("bell", .bool(true)), ("desktop", .bool(true))]))
        try Data("garbage{{{\n".utf8).write(to: defaults)
        let screen = try await tmux.waitFor("ui", timeout: 10) { $0.contains("A file could not be read") }
        let box = Self.box(screen)
        #expect(box.contains("was not valid JSON; it was kept as defaults.json.corrupt-"), "\(screen)")
        #expect(
            box.contains(
                "every value was restored from defaults.backup.json (categories World, Sports; alerts bell, desktop; "
                    + "read messages kept 5 days)"), "\(screen)")
        try await tmux.keys("ui", "Enter")
        let after = try await tmux.waitFor("ui") { !$0.contains("A file could not be read") }
        #expect(after.contains("Alerts: bell, desktop"), "\(after)")
        #expect(after.contains("[  ON ] World") && after.contains("[  ON ] Sports"), "\(after)")
        let kept = try stored()
        #expect(kept["arrivalAlerts"] == .object([("bell", .bool(true)), ("desktop", .bool(true))]), "\(kept.text)")
        #expect(kept["keepReceivedDays"] == .number("5"), "\(kept.text)")
        #expect(kept["BreakingNewsCategories"] == .strings(["World", "Sports"]), "\(kept.text)")
        // And it stays so: a second later the window still says so.
        try await Task.sleep(nanoseconds: 1_000_000_000)
        #expect(try await tmux.capture("ui").contains("Alerts: bell, desktop"))
    }

    /// The text of the box on `screen`, its lines joined as one.
    static func box(_ screen: String) -> String {
        screen.split(separator: "\n").compactMap { line -> String? in
            guard let first = line.firstIndex(of: "│"), let last = line.lastIndex(of: "│"), first < last else { return nil }
            return line[line.index(after: first)..<last].trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }.joined(separator: " ")
    }
}

/// Issue 45: a corrupt installation.json, and a rotated Listen key, from the command line.
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct HomeTruthCommandTests {
    /// The old installation is not left on the hub beside a new one: a send afterwards
    /// reaches one device, not two.
    @Test func aCorruptInstallationFileLeavesOneInstallationOnTheHub() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        let file = user.home.appendingPathComponent("data/installation.json")
        let id = try #require(try JSONValue(parsing: Data(contentsOf: file))["installationId"]?.stringValue)
        try Data("junk".utf8).write(to: file)
        let again = try await user.run(["subscribe", "World"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("restored from installation.backup.json (installation \(id))"), "\(again.stderr)")
        let sent = try await user.run(["send", "once", "--category", "World", "--test"])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stdout.contains("outcome: 1 succeeded, 0 failed"), "\(sent.stdout)")
        let devices = try await user.run(["hub", "devices", "--json"])
        guard case .array(let listed) = try JSONValue(parsing: devices.stdout) else {
            Issue.record("\(devices.stdout)")
            return
        }
        #expect(listed.count == 1, "\(devices.stdout)")
    }

    /// A home on another home's hub with the Listen string of before a rotation is told
    /// which connection string to fetch, by `subscribe` and by `log`.
    @Test func aRotatedListenKeyNamesTheCommandThatPrintsTheCurrentString() async throws {
        let owner = Command.freshHome()
        defer { _ = try? owner.start(["hub", "stop"]) }
        #expect(try await owner.run(["subscribe", "World"]).status == 0)
        let printed = try await owner.run(["hub", "connection-strings", "--json"])
        let listen = try #require(try JSONValue(parsing: printed.stdout)["listen"]?.stringValue, "\(printed.stdout)")
        let other = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": listen])
        #expect(try await other.run(["subscribe", "World"]).status == 0)
        let rotated = try await owner.run(["hub", "keys", "regenerate", AuthorizationRule.listenRuleName])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let refused = try await other.run(["subscribe", "World"])
        #expect(refused.status == 4, "\(refused.stderr)")
        #expect(refused.stderr.contains("'breaking-news hub connection-strings'"), "\(refused.stderr)")
        let log = try await other.run(["log"])
        #expect(log.stderr.contains("'breaking-news hub connection-strings'"), "\(log.stderr)")
    }
}

/// Issue 45, "the CLI answers before it acts".
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct AnswerFirstCommandTests {
    /// `subscribe` with no categories changes nothing: it prints what is chosen and its usage
    /// (exit 2); `--none` unsubscribes from everything.
    @Test func subscribeWithNoCategoriesAnswersAndNoneUnsubscribes() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World", "Sports"]).status == 0)
        let bare = try await user.run(["subscribe"])
        #expect(bare.status == 2, "\(bare.stdout) \(bare.stderr)")
        #expect(bare.stdout == "Chosen now: World, Sports.\n", "\(bare.stdout)")
        #expect(bare.stderr.contains("nothing changed") && bare.stderr.contains("--none"), "\(bare.stderr)")
        #expect(bare.stderr.contains("Usage: breaking-news subscribe"), "\(bare.stderr)")
        func tags() async throws -> JSONValue? {
            try JSONValue(parsing: try await user.run(["installation"]).stdout)["tags"]
        }
        #expect(try await tags() == .strings(["World", "Sports"]))
        let both = try await user.run(["subscribe", "--none", "World"])
        #expect(both.status == 2, "\(both.stderr)")
        let none = try await user.run(["subscribe", "--none"])
        #expect(none.status == 0, "\(none.stderr)")
        #expect(none.stdout == "Subscribed to no categories.\n", "\(none.stdout)")
        let emptied = try await tags()
        #expect(emptied == nil || emptied == .array([]), "\(String(describing: emptied))")
    }

    /// `log --keep-days N` alone stores the setting, says so in one line and lists nothing;
    /// it prunes nothing itself (the next `log` does, as the line says).
    @Test func keepDaysAloneSetsConfirmsAndListsNothing() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        #expect(try await user.run(["send", "kept", "--category", "World"]).status == 0)
        #expect(try await user.run(["log", "--mark-read"]).stdout.contains("Breaking World News : kept"))
        let set = try await user.run(["log", "--keep-days", "2"])
        #expect(set.status == 0, "\(set.stderr)")
        let confirmed = "The received log keeps read messages 2 days from now on (unread ones always stay); none is older now.\n"
        #expect(set.stdout == confirmed, "\(set.stdout)")
        let defaults = try String(contentsOf: user.home.appendingPathComponent("config/defaults.json"), encoding: .utf8)
        #expect(defaults.contains(#""keepReceivedDays":2"#), "\(defaults)")
        let everything = try await user.run(["log", "--keep-days", "0"])
        #expect(everything.status == 0 && everything.stdout.hasPrefix("The received log keeps every message"))
        #expect(!everything.stdout.contains("Breaking World News"))
        // With another option it still lists, as before, and says the setting on standard error.
        let listed = try await user.run(["log", "--keep-days", "2", "-n", "5"])
        #expect(listed.stdout.contains("Breaking World News : kept"), "\(listed.stdout)")
        #expect(listed.stderr.hasPrefix("The received log keeps read messages 2 days from now on"), "\(listed.stderr)")
        // A negative number is a bad value, not a missing one: exit 2, one line, nothing stored.
        let negative = try await user.run(["log", "--keep-days", "-1"])
        #expect(negative.status == 2 && negative.stderr.contains("--keep-days takes 0 (keep everything) or more"))
        #expect(!negative.stderr.contains("Missing value"), "\(negative.stderr)")
    }
}
