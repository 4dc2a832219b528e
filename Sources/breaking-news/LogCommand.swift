import ArgumentParser
import BreakingNewsKit
import Foundation
import NewsCommandLine
import NotificationHubs

/// `breaking-news log`: every message this terminal received; `--follow` keeps receiving.
struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Show the messages this terminal received (fetching new ones first); --follow keeps listening.",
        discussion: """
            With --follow --exec COMMAND, COMMAND runs through /bin/sh -c for each new message (those \
            already in the log are neither shown nor run), one after another, instead of printing it. \
            The message is in the environment, never in the command's text: NEWS_ID, NEWS_CATEGORY, \
            NEWS_TEXT, NEWS_RECEIVED_AT, NEWS_SEQ and NEWS_HUB. Quote them: \
            breaking-news log --follow --exec 'notify-send "$NEWS_CATEGORY" "$NEWS_TEXT"'. \
            A command that fails is reported on standard error and the next message runs anyway; \
            stopping the follower sends SIGTERM to the command under way. A command that prints \
            NEWS_TEXT to a terminal passes the escape sequences in it through: printf '%s\\n' \
            "$NEWS_TEXT" | cat -v shows them instead.
            """)

    @Flag(name: .shortAndLong, help: "Keep the stream open and print messages as they arrive.")
    var follow = false

    @Option(help: "Only this category.")
    var category: String?

    @Flag(help: "Print JSON lines.")
    var json = false

    @Option(
        name: .customLong("exec"),
        help: ArgumentHelp(
            "With --follow: run COMMAND (/bin/sh -c) for each new message, the message in NEWS_* variables.",
            valueName: "command"))
    var command: String?

    func validate() throws {
        guard command != nil else { return }
        if !follow { throw ValidationError("--exec runs a command for each new message; it needs --follow") }
        if json { throw ValidationError("--exec runs a command instead of printing messages; it takes no --json") }
    }

    @OptionGroup var hubFlags: HubFlags

    func run() async throws {
        let profile = try openProfile()
        var filter: String?
        if let category {
            guard let known = profile.catalog.category(named: category) else {
                throw CommandFailure.rejected(
                    "'\(category)' is not a category; choose from \(profile.catalog.categories.map(\.name).joined(separator: ", "))"
                )
            }
            filter = known.name
        }
        let endpoint: HubEndpoint
        do {
            endpoint = try await hubFlags.endpoint(paths: profile.paths)
        } catch let failure as CommandFailure where failure.exitCode == .hubUnreachable && !follow {
            printError("note: \(failure.message); showing what was received before")
            print(entries: profile.log.entries, filter: filter)
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
            print(entries: profile.log.entries, filter: filter)
            profile.log.markRead(category: filter)
            return
        }
        let shown = profile.log.entries
        let runner = command.map(MessageCommand.init)
        if runner == nil { print(entries: shown, filter: filter) }
        // Every message of this home, whichever process received it: the log is followed, and
        // this process's own receiver appends to it like any other.
        let follower = LogFollower(log: profile.log, shownThrough: shown.count)
        let printer = Task {
            for await entries in follower.entries {
                guard let runner else {
                    print(entries: entries, filter: filter)
                    continue
                }
                for entry in entries where filter == nil || entry.category == filter { await runner.run(for: entry) }
            }
        }
        let receiver = InboxReceiver(
            sandbox: profile.sandbox(endpoint), log: profile.log, catalog: profile.catalog, follower: follower)
        let signals = SignalHandler { _ in
            runner?.stop()
            receiver.stop()
        }
        defer {
            signals.cancel()
            follower.stop()
        }
        var wasOnline = false
        var lost = false
        var offline: String?
        var waitingForRegistration = false
        for await status in receiver.statuses {
            switch status {
            case .online:
                waitingForRegistration = false
                if wasOnline { printError("reconnected to the hub") }
                wasOnline = true
                lost = false
            case .reconnecting(let seconds, let reason):
                // Once per outage: on the embedded hub, tries come every second.
                if !lost { printError("lost the hub (\(reason)); retrying in \(Int(seconds.rounded(.up))) s") }
                lost = true
            case .offline(let reason):
                offline = reason
            case .notRegistered:
                if !waitingForRegistration {
                    printError("this terminal is not registered yet; waiting for 'breaking-news subscribe'")
                }
                waitingForRegistration = true
            case .connecting, .stopped:
                break
            }
        }
        follower.poll()
        follower.stop()
        await printer.value
        if let offline { throw CommandFailure(offline, exitCode: offline.contains("refused") ? .refusedByAuth : .failure) }
    }

    func print(entries: [InboxEntry], filter: String?) {
        for entry in entries where filter == nil || entry.category == filter {
            if json {
                say(entry.jsonLine)
            } else {
                let category = (entry.category ?? "—").padding(toLength: 10, withPad: " ", startingAt: 0)
                say("\(DisplayTime.short(entry.receivedAt))  \(category)  \(TerminalText.line(entry.text))")
            }
        }
        fflush(nil)
    }
}
