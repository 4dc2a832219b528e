import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import TestTiers
import Testing

/// Issue 10, seen from a shell: the CLI against hostile news, a hostile hub, a stale state
/// file and hostile arguments.
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct HostileInputEndToEndTests {
    static let hostile = "a\u{1B}]0;pwned\u{7}b\u{1B}[2Jc\u{1B}]52;c;ZXZpbA==\u{7}d\u{9B}31me"

    /// Bytes no terminal output of ours may carry: C0 controls but LF, DEL, and C1 (C2 80–9F).
    func controlBytes(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        var found: [UInt8] = []
        for (i, byte) in bytes.enumerated() {
            if (byte < 0x20 && byte != 0x0A) || byte == 0x7F { found.append(byte) }
            if byte == 0xC2, i + 1 < bytes.count, (0x80...0x9F).contains(bytes[i + 1]) { found.append(bytes[i + 1]) }
        }
        return found
    }

    @Test func logShowsHostileNewsWithoutObeyingIt() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.full.description])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            let follow = try user.start(["log", "--follow"])
            defer { follow.stop() }
            #expect(try await user.run(["send", Self.hostile, "--category", "World"]).status == 0)
            #expect(await follow.waitFor { out, _ in out.contains("pwned") }, "\(follow.stderr)")
            let log = try await user.run(["log"])
            #expect(log.status == 0)
            #expect(log.stdout.contains("Breaking World News : a\u{FFFD}]0;pwned"))
            #expect(controlBytes(log.stdout).isEmpty, "\(controlBytes(log.stdout))")
            #expect(controlBytes(follow.stdout).isEmpty, "\(controlBytes(follow.stdout))")
            // --json stays exact: the text reads back whole from its escapes.
            let json = try await user.run(["log", "--json"])
            #expect(controlBytes(json.stdout).isEmpty)
            let line = try #require(json.stdout.split(separator: "\n").last)
            #expect(try JSONValue(parsing: String(line))["text"]?.stringValue == "Breaking World News : \(Self.hostile)")
        }
    }

    @Test func errorsFromAHostileHubAreShownWithoutControlCharacters() async throws {
        let hostileHub = ScriptedServer(
            [(400, nil)], details: ["bad \u{1B}]0;pwned\u{7} \u{9B}2J request\nbreaking-news: a line of its own"])
        try await hostileHub.serve { port in
            let user = Command.freshHome()
            let result = try await user.run([
                "send", "hi", "--category", "World", "--connection-string",
                "Endpoint=http://127.0.0.1:\(port)/;SharedAccessKeyName=k;SharedAccessKey=v;EntityPath=h",
            ])
            #expect(result.status == 5, "\(result.stderr)")
            #expect(result.stderr.contains("pwned"))
            #expect(controlBytes(result.stderr).isEmpty, "\(controlBytes(result.stderr))")
            // A detail cannot forge lines of its own: one message, one line.
            #expect(result.stderrLines.count == 1, "\(result.stderr)")
            #expect(controlBytes(result.stdout).isEmpty)
        }
    }

    @Test func aHugeTokenLifetimeIsAUsageError() async throws {
        let result = try await Command.freshHome().run(["token", "--expiry", "9223372036854775000"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.contains("expiry"))
        #expect(!result.stderr.contains("Fatal"))
    }

    /// A state file left by a crash names a pid that is now something else, and an address
    /// nothing (or anything) answers at: status and stop say so and touch nothing.
    @Test func hubStatusAndStopActOnlyOnAVerifiedHub() async throws {
        let user = Command.freshHome()
        let bystander = try ChildProcess.start(["/bin/sleep", "600"])
        close(bystander.standardOutput)
        close(bystander.standardError)
        defer {
            bystander.signal(SIGKILL)
            bystander.waitUntilExit()
        }
        let folder = user.home.appendingPathComponent("data/hub")
        try DataFolder.prepare(folder, files: LocalHubDefaults.dataFiles)
        try LocalHubState(
            pid: bystander.pid, url: "http://127.0.0.1:9", hubs: ["breakingnews"], tls: false, started: "",
            secret: LocalHubProof.makeSecret()
        ).write(to: folder.appendingPathComponent(LocalHubState.fileName))
        let status = try await user.run(["hub", "status"])
        #expect(status.status == 3, "\(status.stdout)")
        let stop = try await user.run(["hub", "stop"])
        #expect(stop.status == 3, "\(stop.stdout)")
        #expect(stop.stderr.contains("not stopping"))
        #expect(bystander.isRunning)
    }

    /// After a crash, another program took the hub's port: the CLI starts a hub of its own
    /// (which cannot bind) and never hands its token to the squatter.
    @Test func whatSquatsTheHubPortGetsNoToken() async throws {
        let squatter = ScriptedServer([])
        try await squatter.serve { port in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_HUB_PORT": String(port)])
            let folder = user.home.appendingPathComponent("data/hub")
            try DataFolder.prepare(folder, files: LocalHubDefaults.dataFiles)
            // The test runner holds the port, as the crashed hub's replacement would.
            try LocalHubState(
                pid: getpid(), url: "http://127.0.0.1:\(port)", hubs: ["breakingnews"], tls: false, started: "",
                secret: LocalHubProof.makeSecret()
            ).write(to: folder.appendingPathComponent(LocalHubState.fileName))
            let subscribed = try await user.run(["subscribe", "World"])
            #expect(subscribed.status == 3, "\(subscribed.stdout) \(subscribed.stderr)")
            let sent = try await user.run(["send", "secret", "--category", "World"])
            #expect(sent.status == 3, "\(sent.stdout) \(sent.stderr)")
            #expect(squatter.authorizations.isEmpty, "\(squatter.authorizations)")
        }
    }

    /// A hub started by an earlier version wrote a state file without a secret: it is
    /// stopped and replaced, not left holding the folder while every command waits.
    @Test func aHubOfAnEarlierVersionIsReplacedAndCanBeStopped() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        let stateFile = user.home.appendingPathComponent("data/hub/\(LocalHubState.fileName)")
        var old = try #require(LocalHubState.read(stateFile))
        old.secret = nil
        try old.write(to: stateFile)
        let sent = try await user.run(["send", "hello", "--category", "World"])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(!LocalProcess.isAlive(old.pid))
        let now = try #require(LocalHubState.read(stateFile))
        #expect(now.pid != old.pid)
        // And `hub stop` stops one of those too.
        var older = now
        older.secret = nil
        try older.write(to: stateFile)
        let stopped = try await user.run(["hub", "stop"])
        #expect(stopped.status == 0, "\(stopped.stderr)")
        #expect(!LocalProcess.isAlive(now.pid))
    }

    /// A hub that holds its port but answers nothing (here: stopped with SIGSTOP) is still
    /// stopped by `hub stop`.
    @Test func aHungHubIsStillStopped() async throws {
        let user = Command.freshHome()
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        let state = try #require(LocalHubState.read(user.home.appendingPathComponent("data/hub/\(LocalHubState.fileName)")))
        kill(state.pid, SIGSTOP)
        let stopped = try await user.run(["hub", "stop"], timeout: 90)
        #expect(stopped.status == 0, "\(stopped.stderr)")
        #expect(!LocalProcess.isAlive(state.pid))
    }

    /// Issue 44: a hub that holds its data folder's lock but no longer listens where
    /// `hub.json` says (as one whose shutdown hung) is stopped by `hub stop`, which says so in
    /// one line; it was "not stopping anything" before.
    @Test func aHubThatStoppedListeningIsStillStopped() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        let stateFile = user.home.appendingPathComponent("data/hub/\(LocalHubState.fileName)")
        var state = try #require(LocalHubState.read(stateFile))
        // Where it listens no more: a port nothing of its holds.
        state.url = "http://127.0.0.1:9"
        try state.write(to: stateFile)
        let stopped = try await user.run(["hub", "stop"], timeout: 90)
        #expect(stopped.status == 0, "\(stopped.stderr)")
        #expect(stopped.stdout.split(separator: "\n").count == 1, "\(stopped.stdout)")
        #expect(
            stopped.stdout.contains(
                "stopped the local hub (pid \(state.pid), no longer listening but holding this data folder's lock)"),
            "\(stopped.stdout)")
        #expect(!LocalProcess.isAlive(state.pid))
        #expect(!FileManager.default.fileExists(atPath: stateFile.path))
    }

    /// The hub of another home, named in this home's `hub.json`, is a breaking-news process
    /// that holds a lock, but not this folder's: `hub stop` leaves it alone.
    @Test func anotherHomesHubIsNeverSignalled() async throws {
        let other = Command.freshHome()
        defer { _ = try? other.start(["hub", "stop"]) }
        #expect(try await other.run(["subscribe", "World"]).status == 0)
        let otherState = try #require(
            LocalHubState.read(other.home.appendingPathComponent("data/hub/\(LocalHubState.fileName)")))
        let user = Command.freshHome()
        let folder = user.home.appendingPathComponent("data/hub")
        try DataFolder.prepare(folder, files: LocalHubDefaults.dataFiles)
        var named = otherState
        named.url = "http://127.0.0.1:9"
        try named.write(to: folder.appendingPathComponent(LocalHubState.fileName))
        let stop = try await user.run(["hub", "stop"])
        #expect(stop.status == 3, "\(stop.stdout)")
        #expect(stop.stderr.contains("not stopping"))
        #expect(LocalProcess.isAlive(otherState.pid))
    }
}
