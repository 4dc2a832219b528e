import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import TestTiers
import Testing

/// `log --follow --exec CMD` (issue 12): a command per new message, as ntfy's
/// `subscribe TOPIC COMMAND` runs one, the message in environment variables only.
@Suite(.tags(.live), .fullSuiteOnly, .serialized)
struct FollowExecTests {
    /// What the test commands write per message: the fields, one line.
    static let record =
        #"printf '%s|%s|%s|%s|%s|%s|%s\n' "$NEWS_SEQ" "$NEWS_CATEGORY" "$NEWS_TEXT" "$NEWS_ID" "$NEWS_HUB" "$NEWS_RECEIVED_AT" "$NEWS_SENT_AT" >> "$OUT""#

    struct Line: Equatable {
        let seq: Int
        let category: String
        let text: String
        let id: String
        let hub: String
        let receivedAt: String
        let sentAt: String
    }

    static func lines(_ file: URL) -> [Line] {
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 7, let seq = Int(fields[0]) else { return nil }
            return Line(
                seq: seq, category: fields[1], text: fields[2], id: fields[3], hub: fields[4], receivedAt: fields[5],
                sentAt: fields[6])
        }
    }

    /// A home subscribed to World and Sports on a hub of its own, with one message already in
    /// its log.
    static func subscribedHome(_ hub: HubProcess) async throws -> Command {
        var user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
        let subscribed = try await user.run(["subscribe", "World", "Sports"])
        #expect(subscribed.status == 0, "\(subscribed.stderr)")
        let client = try HubClient(connectionString: hub.full)
        _ = try await client.send(.template(["messageParam": "Breaking World News : old news"]), tagExpression: "World")
        let listed = try await user.run(["log"])
        #expect(listed.stdout.contains("old news"), "\(listed.stderr)")
        user.environment["OUT"] = user.home.appendingPathComponent("exec.out").path
        return user
    }

    static func send(_ client: HubClient, _ category: String, _ text: String) async throws {
        _ = try await client.send(
            .template(["messageParam": "Breaking \(category) News : \(text)"]), tagExpression: category)
    }

    /// Waits until `file` holds `count` lines (30 s at most), then a little more so that a
    /// message run twice shows.
    static func waitForLines(_ file: URL, count: Int) async throws -> [Line] {
        let deadline = Date().addingTimeInterval(30)
        while lines(file).count < count, Date() < deadline { try await Task.sleep(nanoseconds: 50_000_000) }
        try await Task.sleep(nanoseconds: 500_000_000)
        return lines(file)
    }

    /// Texts made to break out of a command line reach the command as data: each message
    /// runs the command once, in order, with its fields; a failing run is reported and the
    /// next one runs; what was in the log before is not run.
    @Test func eachNewMessageRunsTheCommandWithItsFields() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = try await Self.subscribedHome(hub)
            let out = URL(fileURLWithPath: user.environment["OUT"]!)
            let pwned = user.home.appendingPathComponent("pwned")
            let command = Self.record + #"; case "$NEWS_TEXT" in *'fail here'*) exit 3;; esac"#
            let follow = try user.start(["log", "--follow", "--exec", command])
            defer { follow.stop() }

            let client = try HubClient(connectionString: hub.full)
            let sent: [(String, String)] = [
                ("World", "$(touch \(pwned.path))"),
                ("Sports", "`touch \(pwned.path)`"),
                ("World", #"it's "quoted"; touch \#(pwned.path) & echo '$HOME' \"#),
                ("Sports", "fail here"),
                ("World", "after the failure 🗳️"),
            ]
            for (category, text) in sent { try await Self.send(client, category, text) }

            let lines = try await Self.waitForLines(out, count: sent.count)
            #expect(lines.map(\.category) == sent.map(\.0))
            #expect(lines.map(\.text) == sent.map { "Breaking \($0.0) News : \($0.1)" })
            #expect(lines.map(\.seq) == lines.map(\.seq).sorted() && Set(lines.map(\.seq)).count == lines.count)
            #expect(Set(lines.map(\.id)).count == sent.count && !lines.contains { $0.id.isEmpty })
            #expect(lines.allSatisfy { $0.hub == "news" && $0.receivedAt.contains("T") })
            // Sent, by the hub's clock, no later than received.
            #expect(
                lines.allSatisfy { line in
                    guard let sent = W3CDate.parse(line.sentAt), let received = W3CDate.parse(line.receivedAt) else {
                        return false
                    }
                    return sent <= received
                })
            #expect(!FileManager.default.fileExists(atPath: pwned.path), "a message ran as a command")
            #expect(await follow.waitFor { _, err in err.contains("status 3") })
            #expect(follow.stderr.split(separator: "\n").filter { $0.contains("status") }.count == 1)
            #expect(!follow.stdout.contains("old news"), "what was in the log before neither runs nor prints")
            #expect(!Self.lines(out).contains { $0.text.contains("old news") })

            await follow.terminate()
            #expect(follow.status == 143, "stopped by SIGTERM: 128 + 15. \(follow.stderr)")
        }
    }

    /// `--category` chooses the messages the command runs for.
    @Test func theCategoryFilterChoosesTheMessages() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = try await Self.subscribedHome(hub)
            let out = URL(fileURLWithPath: user.environment["OUT"]!)
            let follow = try user.start(["log", "--follow", "--category", "sports", "--exec", Self.record])
            defer { follow.stop() }

            let client = try HubClient(connectionString: hub.full)
            for i in 0..<6 { try await Self.send(client, i % 2 == 0 ? "World" : "Sports", "n\(i)") }
            let lines = try await Self.waitForLines(out, count: 3)
            #expect(lines.map(\.text) == ["Breaking Sports News : n1", "Breaking Sports News : n3", "Breaking Sports News : n5"])
            await follow.terminate()
        }
    }

    /// The processes whose parent is `pid`.
    static func children(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { name -> Int32? in
            guard let child = Int32(name), let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // After "pid (comm) " come the state and the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && Int32(fields[1]) == pid ? child : nil
        }
    }

    /// SIGTERM to the follower while a command runs ends the command (its shell and what the
    /// shell runs) and the follower at once, not when the command would have ended.
    @Test func stoppingTheFollowerEndsTheCommandUnderWay() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = try await Self.subscribedHome(hub)
            let out = URL(fileURLWithPath: user.environment["OUT"]!)
            let follow = try user.start(["log", "--follow", "--exec", #"echo $$ > "$OUT"; sleep 30; echo done >> "$OUT""#])
            defer { follow.stop() }
            try await Self.send(try HubClient(connectionString: hub.full), "World", "slow")

            // The command's shell, and the sleep it runs.
            var shell: Int32?
            var sleeper: Int32?
            let deadline = Date().addingTimeInterval(30)
            while sleeper == nil, Date() < deadline {
                try await Task.sleep(nanoseconds: 50_000_000)
                shell = ((try? String(contentsOf: out, encoding: .utf8)) ?? "").split(separator: "\n").first.flatMap { Int32($0) }
                sleeper = shell.flatMap { Self.children(of: $0).first }
            }
            let (sh, sleep) = try (#require(shell), #require(sleeper))

            let stopped = Date()
            follow.stop()
            #expect(await follow.wait(timeout: 15), "the follower waits for the command")
            #expect(Date().timeIntervalSince(stopped) < 10)
            let gone = Date().addingTimeInterval(5)
            while LocalProcess.isAlive(sleep) || LocalProcess.isAlive(sh), Date() < gone {
                try await Task.sleep(nanoseconds: 50_000_000)
            }
            #expect(!LocalProcess.isAlive(sleep), "the command's sleep runs on")
            #expect(!LocalProcess.isAlive(sh))
            #expect(!((try? String(contentsOf: out, encoding: .utf8)) ?? "").contains("done"))
            #expect(follow.status == 143, "stopped by SIGTERM: 128 + 15. \(follow.stderr)")
            #expect(!follow.stderr.contains("status"), "a command the follower stopped is no failure: \(follow.stderr)")
            if LocalProcess.isAlive(sleep) { kill(sleep, SIGKILL) }
        }
    }

    /// `--exec` runs a command for what arrives: without `--follow` (or with `--json`) it is a
    /// usage error, in one line.
    @Test func execNeedsFollow() async throws {
        let user = Command.freshHome()
        for arguments in [["log", "--exec", "true"], ["log", "--follow", "--json", "--exec", "true"]] {
            let result = try await user.run(arguments)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderrLines.count == 1, "\(result.stderr)")
            #expect(result.stderr.contains("--exec"))
        }
        let help = try await user.run(["log", "--help"])
        #expect(help.stdout.contains("--exec") && help.stdout.contains("NEWS_TEXT"))
    }
}
