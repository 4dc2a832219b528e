import ArgumentParser
import BreakingNewsKit
import Foundation
import NewsCommandLine
import NotificationHubs
import Synchronization

/// `breaking-news log`: every message this terminal received; `--follow` keeps receiving.
struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Show the messages this terminal received (fetching new ones first); --follow keeps listening.",
        discussion: """
            With --follow --exec COMMAND, COMMAND runs through /bin/sh -c for each new message (those \
            already in the log are neither shown nor run), one after another, instead of printing it. \
            The message is in the environment, never in the command's text: NEWS_ID, NEWS_CATEGORY, \
            NEWS_TEXT, NEWS_SENT_AT, NEWS_RECEIVED_AT, NEWS_SEQ and NEWS_HUB. Quote them: \
            breaking-news log --follow --exec 'notify-send "$NEWS_CATEGORY" "$NEWS_TEXT"'. \
            A command that fails is reported on standard error and the next message runs anyway; \
            stopping the follower sends SIGTERM to the command under way. A command that prints \
            NEWS_TEXT to a terminal passes the escape sequences in it through: printf '%s\\n' \
            "$NEWS_TEXT" | cat -v shows them instead.
            """)

    @Flag(name: .shortAndLong, help: "Keep the stream open and print messages as they arrive.")
    var follow = false

    @Option(name: .shortAndLong, help: "Only this category.")
    var category: String?

    @Flag(name: .shortAndLong, help: "Only the messages not read yet (in any window of this home).")
    var unread = false

    @Option(
        name: [.customShort("n"), .customLong("lines")], help: "Only the last N messages (0: none; with --follow, only new ones)."
    )
    var lines: Int?

    @Option(
        name: [.customShort("S"), .customLong("since")],
        help: ArgumentHelp(
            "Only messages received since TIME: 15m, 2h, 3d ago; today, yesterday; 17:30; 2026-11-21; 2026-11-21T17:30:00Z.",
            valueName: "time"))
    var since: String?

    @Flag(name: .customLong("mark-read"), help: "Mark what is printed read (listing alone never changes what is read).")
    var markRead = false

    @Flag(name: .shortAndLong, help: "Print JSON lines.")
    var json = false

    @Option(
        name: .customLong("keep-days"), parsing: .unconditional,
        help: ArgumentHelp(
            "From now on keep read messages N days in the received log (0: keep everything, the default); unread ones always stay. Alone, it sets and confirms this, listing and pruning nothing.",
            valueName: "N"))
    var keepDays: Int?

    @Option(
        name: .customLong("exec"),
        help: ArgumentHelp(
            "With --follow: run COMMAND (/bin/sh -c) for each new message, the message in NEWS_* variables.",
            valueName: "command"))
    var command: String?

    func validate() throws {
        if let lines, lines < 0 { throw ValidationError("-n/--lines takes 0 or more") }
        if let keepDays, keepDays < 0 { throw ValidationError("--keep-days takes 0 (keep everything) or more") }
        if let since, LogQuery.time(since) == nil {
            throw ValidationError(
                "--since takes 15m, 2h, 3d, today, yesterday, HH:MM, YYYY-MM-DD or a W3C time, not '\(since)'")
        }
        guard command != nil else { return }
        if !follow { throw ValidationError("--exec runs a command for each new message; it needs --follow") }
        if json { throw ValidationError("--exec runs a command instead of printing messages; it takes no --json") }
    }

    @OptionGroup var hubFlags: HubFlags

    /// Whether `--keep-days` is all that was asked (the hub flags aside): a setting, answered
    /// and stored, not a listing.
    var onlySetsKeepDays: Bool {
        keepDays != nil && !follow && category == nil && !unread && lines == nil && since == nil && !markRead && !json
            && command == nil
    }

    func run() async throws {
        let profile = try openProfile()
        if let keepDays {
            do {
                try profile.store.update { $0.keepReceivedDays = keepDays > 0 ? keepDays : nil }
            } catch {
                throw CommandFailure("cannot store --keep-days: \(error.localizedDescription)", exitCode: .failure)
            }
            let confirmation = Self.keepDaysConfirmation(keepDays, going: profile.log.prunableCount(keepingDays: keepDays))
            if onlySetsKeepDays {
                say(confirmation)
                return
            }
            // Beside a listing, the setting is still said, on standard error (the listing
            // stays what it was on standard output).
            printError(confirmation)
        }
        // What the preferences no longer keep goes before anything is listed.
        profile.pruneReceivedLog()
        var query = LogQuery(unreadOnly: unread, since: since.flatMap { LogQuery.time($0) }, last: lines)
        if let category {
            guard let known = profile.catalog.category(named: category) else {
                throw CommandFailure.rejected(
                    "'\(category)' is not a category; choose from \(profile.catalog.categories.map(\.name).joined(separator: ", "))"
                )
            }
            query.category = known.name
        }
        let endpoint: HubEndpoint
        do {
            endpoint = try await hubFlags.endpoint(paths: profile.paths)
        } catch let failure as CommandFailure where failure.exitCode == .hubUnreachable && !follow {
            printError("note: \(failure.message); showing what was received before")
            list(profile, query)
            return
        }
        if !follow {
            do {
                try await profile.sync(endpoint)
            } catch {
                printError(
                    error.isRefusal
                        ? "note: \(error.description)" : "note: \(error.description); showing what was received before")
            }
            list(profile, query)
            return
        }
        try await follow(profile, endpoint: endpoint, query: query)
    }

    /// The one line `log --keep-days N` alone answers: the setting, and what it will prune
    /// (nothing is pruned now; the next `log` or window launch does).
    static func keepDaysConfirmation(_ days: Int, going: Int) -> String {
        guard days > 0 else { return "The received log keeps every message (keepReceivedDays unset): nothing is pruned." }
        let unit = days == 1 ? "day" : "days"
        let which =
            going == 0
            ? "none is older now"
            : "\(going) read message\(going == 1 ? "" : "s") older than that go\(going == 1 ? "es" : "") at the next 'log' or window launch"
        return "The received log keeps read messages \(days) \(unit) from now on (unread ones always stay); \(which)."
    }

    /// Prints what `query` selects (marking it read when asked).
    private func list(_ profile: NewsProfile, _ query: LogQuery) {
        let shown = query.select(profile.log.entries, marks: profile.log.reloadMarks())
        print(entries: shown)
        if markRead { profile.log.markRead(shown) }
    }

    /// Prints (or runs the command for) what is there, then every new message as it comes,
    /// until a signal or a refusal ends it.
    private func follow(_ profile: NewsProfile, endpoint: HubEndpoint, query: LogQuery) async throws {
        let runner = command.map(MessageCommand.init)
        // Signals are this command's before anything is printed or received: one that came
        // before the receiver exists stops it as soon as it does. (The handler was installed
        // after the receiver started; a SIGTERM once went unanswered in a test, the window
        // between ignoring a signal and the dispatch source taking it being the suspect.)
        let signal = Mutex<Int32?>(nil)
        let stopping = Mutex<InboxReceiver?>(nil)
        let signals = SignalHandler { number in
            signal.withLock { $0 = $0 ?? number }
            runner?.stop()
            stopping.withLock { $0 }?.stop()
        }
        defer { signals.cancel() }
        let known = profile.log.entries
        // The backlog, as without --follow; what arrives later passes the same filter, but
        // not --since's count (new is newer than any time given) nor --unread (new is unread).
        if runner == nil { list(profile, query) }
        var arrivals = query
        arrivals.last = nil
        let newArrivals = arrivals
        // Every message of this home, whichever process received it: the log is followed, and
        // this process's own receiver appends to it like any other.
        let follower = LogFollower(log: profile.log, shownThrough: known.count)
        let markRead = markRead
        // The receiver; replaced by a new one (a new stream) when the home is unregistered.
        let receiving = FollowedReceiver()
        // A registration made elsewhere (a window, a subscribe) lets a device the hub did not
        // know stream at once; `unregister` elsewhere ends the stream the hub no longer sends
        // to, and the new one says so (the follower goes on, and says when it is back).
        let watcher = HomeWatcher(profile: profile)
        var reporter = FollowReporter()
        var offline: OfflineReason?
        // The follower's looking and the home's watch, for as long as this follows.
        await withDiscardingTaskGroup { group in
            group.addTask { await follower.run() }
            group.addTask {
                var last = profile.lastRegistration
                for await shared in watcher.changes where shared.registration != last {
                    defer { last = shared.registration }
                    if shared.registration?.state == .registered {
                        receiving.state.withLock { $0.receiver }?.retryNow()
                    } else if shared.registration == nil, last != nil {
                        receiving.state.withLock { state in
                            state.replace = true
                            return state.receiver
                        }?.stop()
                    }
                }
            }
            // The receivers and the printer: done once the receiving ended and what it
            // appended is printed.
            await withDiscardingTaskGroup { work in
                work.addTask {
                    for await entries in follower.entries {
                        let new = newArrivals.select(entries, marks: profile.log.marks)
                        guard let runner else {
                            self.print(entries: new)
                            if markRead { profile.log.markRead(new) }
                            continue
                        }
                        for entry in new {
                            // A gap is no message: said, not run.
                            if entry.gap != nil { printError("note: \(entry.text)") } else { await runner.run(for: entry) }
                        }
                    }
                }
                repeat {
                    let receiver = InboxReceiver(
                        builtInPush: profile.builtInPush(endpoint), log: profile.log, catalog: profile.catalog, follower: follower
                    )
                    receiving.state.withLock { $0 = (receiver, false) }
                    stopping.withLock { $0 = receiver }
                    if signal.withLock({ $0 }) != nil { receiver.stop() }
                    work.addTask { await receiver.run() }
                    for await status in receiver.statuses {
                        if let line = reporter.line(for: status) { printError(line) }
                        if case .offline(let reason) = status, reason.gaveUp { offline = reason }
                    }
                } while signal.withLock({ $0 }) == nil && receiving.state.withLock({ $0.replace })
                follower.poll()
                follower.stop()
            }
            group.cancelAll()
        }
        // Ended by a signal: the shell's convention, 128 + its number (130 for Ctrl-C, 143 for SIGTERM).
        if let number = signal.withLock({ $0 }) { throw ExitCode(128 + number) }
        switch offline {
        case .refused(let detail)?: throw CommandFailure(detail, exitCode: .refusedByAuth)
        case let reason?: throw CommandFailure(reason.description, exitCode: .failure)
        case nil: return
        }
    }

    func print(entries: [InboxEntry]) {
        for entry in entries {
            if json {
                say(entry.jsonLine)
            } else {
                // The Log's columns: its send time, its category.
                let category = (entry.category ?? "—").padding(toLength: 11, withPad: " ", startingAt: 0)
                say("\(DisplayTime.column(entry.sentAt))  \(category) \(TerminalText.line(entry.text))")
            }
        }
        fflush(nil)
    }
}

/// What `log --follow` says on standard error as its connection changes: each outage once,
/// why it is offline once, and when it is back.
struct FollowReporter {
    static let notRegistered =
        "not registered: news is not reaching this terminal; waiting for a subscribe ('breaking-news subscribe <categories>')"

    private var wasOnline = false
    /// What was said last about the connection being away.
    private var said: String?

    mutating func line(for status: ConnectionStatus) -> String? {
        switch status {
        case .online:
            defer {
                wasOnline = true
                said = nil
            }
            if said == Self.notRegistered {
                return wasOnline ? "registered again: news reaches this terminal" : "registered: news reaches this terminal"
            }
            return wasOnline && said != nil ? "reconnected to the hub" : said != nil ? "connected to the hub" : nil
        case .reconnecting(let seconds, let reason):
            // Once per outage: on the embedded hub, tries come every second.
            guard said == nil else { return nil }
            said = "lost"
            return "lost the hub (\(reason)); retrying in \(Int(seconds.rounded(.up))) s"
        case .offline(let reason):
            let text: String
            switch reason {
            case .hubStopped:
                text = "the local hub is not running; waiting for it to start (a send, a subscribe or a window starts it)"
            case .notRegistered: text = Self.notRegistered
            case .unavailable(let detail): text = "cannot reach the hub (\(detail)); trying again"
            case .refused, .noPushService: return nil  // said once, as the error it ends with
            }
            guard said != text else { return nil }
            said = text
            return text
        case .connecting, .stopped:
            return nil
        }
    }
}

/// The receiver `log --follow` runs now, and whether it is to be replaced by a new one (the
/// home was unregistered elsewhere): shared with the task that watches the home.
private final class FollowedReceiver: Sendable {
    let state = Mutex<(receiver: InboxReceiver?, replace: Bool)>((nil, false))
}
