import ArgumentParser
import BreakingNewsKit
import Foundation
import NewsCommandLine
import NotificationHubs

/// `breaking-news log`: every message this terminal received; `--follow` keeps receiving.
struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Show the messages this terminal received (fetching new ones first); --follow keeps listening.")

    @Flag(name: .shortAndLong, help: "Keep the stream open and print messages as they arrive.")
    var follow = false

    @Option(help: "Only this category.")
    var category: String?

    @Flag(help: "Print JSON lines.")
    var json = false

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
        print(entries: shown, filter: filter)
        // Every message of this home, whichever process received it: the log is followed, and
        // this process's own receiver appends to it like any other.
        let follower = LogFollower(log: profile.log, shownThrough: shown.count)
        let printer = Task {
            for await entries in follower.entries { print(entries: entries, filter: filter) }
        }
        let receiver = InboxReceiver(
            sandbox: profile.sandbox(endpoint), log: profile.log, catalog: profile.catalog, follower: follower)
        let signals = SignalHandler { _ in receiver.stop() }
        defer {
            signals.cancel()
            follower.stop()
        }
        var wasOnline = false
        var offline: String?
        for await status in receiver.statuses {
            switch status {
            case .online:
                if wasOnline { printError("reconnected to the hub") }
                wasOnline = true
            case .reconnecting(let seconds, let reason):
                printError("lost the hub (\(reason)); retrying in \(Int(seconds)) s")
            case .offline(let reason):
                offline = reason
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
