import Foundation
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

/// The built binary driven from a shell's point of view.
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct CommandLineTests {
    /// A new user on a fresh machine: no hub started by hand.
    /// A database that does not answer stops `hub serve` with one line and exit status 3,
    /// its password never printed.
    @Test func aHubWhoseDatabaseDoesNotAnswerSaysSoWithoutThePassword() async throws {
        let user = Command.freshHome()
        // A port picked free, where nothing listens.
        let port = try NginxFront.freePort()
        let url = "postgres://hub:s3cret-word@127.0.0.1:\(port)/nothing"
        let served = try await user.run(["hub", "serve", "--port", "0", "--store", url], timeout: 60)
        #expect(served.status == 3)
        #expect(served.stderr.contains("nothing listens at 127.0.0.1:\(port) (connection refused)"), "\(served.stderr)")
        #expect(!(served.stdout + served.stderr).contains("s3cret"))
        #expect(served.stderr.contains("warning: the password in --store is visible to every user"), "\(served.stderr)")
        // From a file, the password stays out of ps, and no warning is given.
        let file = user.home.appendingPathComponent("db-password")
        try Data("s3cret-word\n".utf8).write(to: file)
        let bare = url.replacingOccurrences(of: ":s3cret-word@", with: "@")
        // A file other users may read is refused, as ssh refuses such a key.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
        let open = try await user.run(["hub", "serve", "--port", "0", "--store", bare, "--store-password-file", file.path])
        #expect(open.status == 1 && open.stderr.contains("chmod 600"), "\(open.stderr)")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        let fromFile = try await user.run(
            ["hub", "serve", "--port", "0", "--store", bare, "--store-password-file", file.path], timeout: 60)
        #expect(fromFile.status == 3 && !fromFile.stderr.contains("warning"), "\(fromFile.stderr)")
        #expect(fromFile.stderr.contains("nothing listens at 127.0.0.1:\(port)"), "\(fromFile.stderr)")
        let missing = try await user.run([
            "hub", "serve", "--port", "0", "--store", bare, "--store-password-file", "/nonexistent",
        ])
        #expect(missing.status == 1 && missing.stderr.contains("cannot read --store-password-file"), "\(missing.stderr)")
        // A metrics token short enough to guess is refused, wherever it comes from.
        for arguments in [["--metrics-token", "short"], ["--metrics-token", ""]] {
            let short = try await user.run(["hub", "serve", "--port", "0"] + arguments)
            #expect(short.status == 2 && short.stderr.contains("at least 16"), "\(short.stderr)")
        }
        let refused = try await user.run(["hub", "serve", "--store", "mysql://x"])
        #expect(refused.status != 0 && refused.stderr.contains("--store takes a postgres:// URL"), "\(refused.stderr)")
    }

    /// A data folder that cannot be made (a read-only disk, a file in its way) stops `hub
    /// serve` with one line and the system's reason, where it printed Foundation's error.
    @Test func aDataFolderThatCannotBeMadeSaysWhyInOneLine() async throws {
        let user = Command.freshHome()
        let file = user.home.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: file)
        let served = try await user.run(["hub", "serve", "--port", "0", "--data", file.appendingPathComponent("hub").path])
        #expect(served.status == 1)
        #expect(served.stderr.contains("cannot make \(file.path)/hub: Not a directory"), "\(served.stderr)")
        #expect(!served.stderr.contains("NSCocoaErrorDomain") && served.stderr.split(separator: "\n").count == 1)
    }

    @Test func subscribeSendLogOnTheEmbeddedHub() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        let subscribed = try await user.run(["subscribe", "World"])
        #expect(subscribed.status == 0, "\(subscribed.stderr)")
        #expect(subscribed.stdout == "Subscribed to World.\n")
        let sent = try await user.run(["send", "hello", "--category", "World"])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stdout.hasPrefix("World      sent  "))
        let log = try await user.run(["log"])
        #expect(log.status == 0, "\(log.stderr)")
        #expect(log.stdout.contains("World       Breaking World News : hello"))
        // The hub kept running in the background and says where.
        let status = try await user.run(["hub", "status"])
        #expect(status.status == 0)
        #expect(status.stdout.hasPrefix("running: pid "))
        let defaults = try String(contentsOf: user.home.appendingPathComponent("config/defaults.json"), encoding: .utf8)
        #expect(defaults.contains(#""BreakingNewsCategories":["World"]"#))
        let stopped = try await user.run(["hub", "stop"])
        #expect(stopped.stdout.hasPrefix("stopped the local hub"))
        #expect(try await user.run(["hub", "status"]).status == 3)
    }

    /// Issue 44: a terminal whose token leaked replaces it from the command line; news sent
    /// to the old token before is in the log, the old claim is let go, and news after reaches
    /// the new token.
    @Test func aNewDeviceTokenIsClaimedRegisteredAndTheOldOneLetGo() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        let file = user.home.appendingPathComponent("data/installation.json")
        func kept() throws -> JSONValue { try JSONValue(parsing: Data(contentsOf: file)) }
        let old = try #require(try kept()["deviceToken"]?.stringValue)
        #expect(try kept()["claimSecret"]?.stringValue.map(BuiltInPushClaim.isSecret) == true)
        #expect(try await user.run(["send", "before", "--category", "World"]).status == 0)
        let replaced = try await user.run(["installation", "--new-device-token"])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        let new = try #require(try kept()["deviceToken"]?.stringValue)
        #expect(new != old)
        #expect(replaced.stdout.contains(new.prefix(16).lowercased()) && replaced.stdout.contains(old.prefix(16).lowercased()))
        #expect(try kept()["previousDeviceToken"] == nil, "the old token retired")
        let installation = try await user.run(["installation"])
        #expect(installation.stdout.contains(new), "\(installation.stdout)")
        #expect(try await user.run(["send", "after", "--category", "World"]).status == 0)
        let log = try await user.run(["log"])
        #expect(log.stdout.contains("Breaking World News : before") && log.stdout.contains("Breaking World News : after"))
        let devices = try await user.run(["hub", "devices", "list", "--json"])
        let claimed = (try JSONValue(parsing: devices.stdout).arrayValue ?? []).filter { $0["claimed"] == .bool(true) }
        #expect(claimed.compactMap { $0["device"]?.stringValue } == [new.lowercased()], "\(devices.stdout)")
    }

    /// Two subscribers and a sender on one hub process: each gets exactly its categories,
    /// in order, once; both logs survive a restart of everything.
    @Test func twoSubscribersGetTheirCategoriesOnlyAndKeepThemAcrossRestarts() async throws {
        let hubDirectory = TestHub.temporaryDirectory()
        let hub = try await HubProcess.start(directory: hubDirectory)
        func environment(_ cs: ConnectionString) -> [String: String] {
            [
                "BREAKING_NEWS_CONNECTION_STRING": cs.description.replacingOccurrences(
                    of: hub.state.url, with: "http://127.0.0.1:\(hub.port)")
            ]
        }
        let worldSports = Command.freshHome(extra: environment(hub.listen))
        let politics = Command.freshHome(extra: environment(hub.listen))
        let sender = Command.freshHome(extra: environment(hub.full))
        #expect(try await worldSports.run(["subscribe", "World", "Sports"]).status == 0)
        #expect(try await politics.run(["subscribe", "Politics"]).status == 0)
        let followA = try worldSports.start(["log", "--follow", "--json"])
        let followB = try politics.start(["log", "--follow", "--json"])
        #expect(await followA.waitFor { _, _ in true })
        let plan = [
            ("World", "w1"), ("Politics", "p1"), ("Sports", "s1"), ("Business", "b1"), ("World", "w2"), ("Politics", "p2"),
            ("Sports", "s2"),
        ]
        for (category, text) in plan {
            let sent = try await sender.run(["send", text, "--category", category])
            #expect(sent.status == 0, "\(sent.stderr)")
        }
        func texts(_ jsonLines: String) -> [String] {
            jsonLines.split(separator: "\n").compactMap { try? JSONValue(parsing: String($0))["text"]?.stringValue }
        }
        let expectA = [
            "Breaking World News : w1", "Breaking Sports News : s1", "Breaking World News : w2", "Breaking Sports News : s2",
        ]
        let expectB = ["Breaking Politics News : p1", "Breaking Politics News : p2"]
        #expect(await followA.waitFor { out, _ in texts(out).count >= 4 })
        #expect(await followB.waitFor { out, _ in texts(out).count >= 2 })
        try await Task.sleep(nanoseconds: 300_000_000)  // nothing more may come
        #expect(texts(followA.stdout) == expectA)
        #expect(texts(followB.stdout) == expectB)

        // Restart subscribers and hub: the logs are intact, still once each.
        await followA.terminate()
        await followB.terminate()
        #expect(followA.status == 143, "stopped by SIGTERM: 128 + 15")
        await hub.stop()
        try await HubProcess.with(directory: hubDirectory, port: hub.port) { _ throws in
            let logA = try await worldSports.run(["log", "--json"])
            let logB = try await politics.run(["log", "--json"])
            #expect(texts(logA.stdout) == expectA, "\(logA.stderr)")
            #expect(texts(logB.stdout) == expectB, "\(logB.stderr)")
        }
    }

    /// `log --follow` loses the hub, says so, retries, reconnects and misses nothing.
    @Test func followSurvivesAHubKilledAndRestarted() async throws {
        let hubDirectory = TestHub.temporaryDirectory()
        let hub = try await HubProcess.start(directory: hubDirectory)
        let cs = ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description]
        let user = Command.freshHome(extra: cs)
        #expect(try await user.run(["subscribe", "Science"]).status == 0)
        let follow = try user.start(["log", "--follow"])
        defer { follow.stop() }
        #expect(try await user.run(["send", "before", "--category", "Science"]).status == 0)
        #expect(await follow.waitFor { out, _ in out.contains("Breaking Science News : before") })
        await hub.kill()
        #expect(await follow.waitFor { _, err in err.contains("lost the hub") && err.contains("retrying in") })
        try await HubProcess.with(directory: hubDirectory, port: hub.port) { _ throws in
            #expect(await follow.waitFor(timeout: 90) { _, err in err.contains("reconnected to the hub") }, "\(follow.stderr)")
            for text in ["after 1", "after 2"] {
                #expect(try await user.run(["send", text, "--category", "Science"]).status == 0)
            }
            #expect(await follow.waitFor { out, _ in out.contains("Breaking Science News : after 2") })
            let lines = follow.stdout.split(separator: "\n").map {
                $0.split(separator: " ", maxSplits: 1).last.map(String.init) ?? ""
            }
            #expect(lines.filter { $0.contains("Science News") }.count == 3)
            #expect(!follow.stderr.contains("Fatal"))
        }
    }

    @Test func aConnectionStringToAHubWithoutBuiltInPushSaysSo() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            // The hub serves "news" only; "elsewhere" has no built-in push service, as on Azure.
            let user = Command.freshHome(extra: [
                "BREAKING_NEWS_CONNECTION_STRING": hub.full.description, "BREAKING_NEWS_HUB": "elsewhere",
            ])
            let log = try await user.run(["log"])
            #expect(log.status == 0)
            #expect(log.stderr.contains("no built-in push service"))
            #expect(log.stderr.contains("real devices"))
        }
    }

    @Test func testSendPrintsTheOutcome() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            #expect(try await user.run(["subscribe", "Technology"]).status == 0)
            let sent = try await user.run(["send", "chips", "--category", "Technology", "--test"])
            #expect(sent.status == 0)
            #expect(sent.stdout.contains("outcome: 1 succeeded, 0 failed"))
            #expect(sent.stdout.contains(NotificationOutcome.sent))
            let raw = try await user.run(["send", "--tags", "Technology || World", "--property", "messageParam=raw hi", "--test"])
            #expect(raw.stdout.contains("outcome: 1 succeeded"), "\(raw.stdout) \(raw.stderr)")
            let native = try await user.run(["send", "--apple", #"{"aps":{"alert":"native"}}"#, "--tags", "Technology"])
            #expect(native.status == 0)
            let installation = try await user.run(["installation"])
            #expect(installation.stdout.contains(#""tags": ["#))
            #expect(installation.stdout.contains(#""Technology""#))
        }
    }

    /// `explain` says why a send reached nobody, as text and as JSON; an unknown id is
    /// refused with its exit code and one line.
    @Test func explainSaysWhyASendReachedNobody() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            let sent = try await user.run(["send", "nobody reads this", "--category", "Sports"])
            let id = try #require(
                sent.stdout.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
            var explained = try await user.run(["explain", id])
            for _ in 0..<100 where explained.stdout.hasPrefix("It is accepted") {
                try await Task.sleep(for: .milliseconds(50))
                explained = try await user.run(["explain", id])
            }
            #expect(explained.status == 0, "\(explained.stderr)")
            #expect(
                explained.stdout.hasPrefix(
                    "Nothing matched: no installation or registration of hub 'news' holds tags that satisfy 'Sports'."),
                "\(explained.stdout)")
            let json = try await user.run(["explain", id, "--json"])
            let parsed = try SendExplanation(json: JSONValue(parsing: json.stdout))
            #expect(parsed.notificationId == id && parsed.matchCount == 0)
            let unknown = try await user.run(["explain", "no-such-send"])
            #expect(unknown.status == 5 && unknown.stderr.split(separator: "\n").count == 1, "\(unknown.stderr)")
        }
    }

    /// Every bad input: its exit code and one line on standard error, never a stack trace.
    @Test func badInputGetsItsExitCodeAndOneLine() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let closed = "Endpoint=http://127.0.0.1:1/;SharedAccessKeyName=k;SharedAccessKey=v;EntityPath=h"
            let cases: [([String], [String: String], Int32, String)] = [
                (["subscribe", "Weather"], [:], 5, "not a category"),
                (["send", "", "--all"], [:], 5, "empty"),
                (["send", String(repeating: "x", count: 2000), "--all"], [:], 5, "1024"),
                (["send", "hi", "--category", "Weather"], [:], 5, "not a category"),
                (["send", "--tags", "a &&& b", "--property", "m=x"], [:], 5, "column"),
                (["send", "--apple", "not json"], [:], 5, "JSON object"),
                (["log", "--category", "Weather"], [:], 5, "not a category"),
                (["send", "hi", "--all", "--connection-string", "Endpoint=nope"], [:], 5, "SharedAccessKeyName"),
                (
                    ["send", "hi", "--all", "--connection-string", "Endpoint=sb://x/;SharedAccessKeyName=a;SharedAccessKey=b"],
                    [:], 2, "--hub"
                ),
                (["send", "hi", "--all", "--connection-string", closed], [:], 3, "could not be reached"),
                (["subscribe", "World", "--connection-string", closed], [:], 3, "Saved World"),
                (["send", "hi", "-c", "World"], ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description], 4, "403"),
                (["send", "hi"], [:], 2, "--category"),
                (["installation"], ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description], 5, "subscribe"),
                (["token", "--expiry", "0"], [:], 2, "expiry"),
                (["subscribe", "--bogus"], [:], 2, "bogus"),
                (["send"], [:], 2, "TEXT"),
            ]
            for (arguments, environment, status, words) in cases {
                let result = try await Command.freshHome(extra: environment).run(arguments)
                let label = arguments.joined(separator: " ").prefix(60)
                #expect(result.status == status, "\(label): \(result.stderr)")
                #expect(result.stderrLines.count == 1, "\(label): \(result.stderr)")
                #expect(result.stderr.contains(words), "\(label): \(result.stderr)")
                #expect(!result.stderr.contains("Fatal error"), "\(label)")
            }
        }
    }

    @Test func aCorruptDefaultsFileIsKeptAsideAndTheAppGoesOn() async throws {
        let user = Command.freshHome()
        let config = user.home.appendingPathComponent("config")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        try Data("{\"BreakingNewsCategories\": [\"World\"".utf8).write(to: config.appendingPathComponent("defaults.json"))
        let result = try await user.run(["categories"])
        #expect(result.status == 0)
        #expect(result.stderr.contains("was not valid JSON; it was kept as defaults.json.corrupt-"))
        #expect(result.stdout.contains("[ ] World"))
        let files = try FileManager.default.contentsOfDirectory(atPath: config.path)
        #expect(files.contains { $0.hasPrefix("defaults.json.corrupt-") })
    }
}
