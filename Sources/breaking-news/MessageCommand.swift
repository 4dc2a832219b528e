import BreakingNewsKit
import Foundation
import LocalHubSupport
import NewsCommandLine
import Synchronization

/// `log --follow --exec CMD`: runs `/bin/sh -c CMD` for each new message, one after another,
/// as ntfy's `subscribe TOPIC COMMAND` does. The message reaches the command only through
/// environment variables, never inside the command's text, so no news can become shell
/// syntax. The command's output is this process's; a failure is reported and the next
/// message runs anyway.
final class MessageCommand: Sendable {
    let command: String
    /// Where commands wait for each other: a thread of its own, never a cooperative one.
    private let queue = DispatchQueue(label: "exec")
    /// The command under way, and whether the follower stopped.
    private let running = Mutex<(child: ChildProcess.Running?, stopped: Bool)>((nil, false))

    init(_ command: String) {
        self.command = command
    }

    /// The variables a message gives the command.
    static func variables(_ entry: InboxEntry) -> [String: String] {
        // An environment string ends at NUL: one in the news would cut it short.
        func value(_ text: String) -> String { text.replacingOccurrences(of: "\0", with: "\u{FFFD}") }
        return [
            "NEWS_ID": value(entry.notificationId), "NEWS_CATEGORY": value(entry.category ?? ""),
            "NEWS_TEXT": value(entry.text), "NEWS_RECEIVED_AT": value(entry.receivedAt),
            "NEWS_SENT_AT": value(entry.sentAt), "NEWS_SEQ": String(entry.seq),
            "NEWS_HUB": value(entry.hubName),
        ]
    }

    /// Runs the command for `entry` and returns when it has ended; does nothing once stopped.
    func run(for entry: InboxEntry) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { [self] in
                defer { continuation.resume() }
                let environment = ProcessInfo.processInfo.environment.merging(Self.variables(entry)) { $1 }
                do {
                    // Started and kept under the lock `stop` takes: a stop either comes first
                    // (nothing starts) or finds the command to end.
                    let started = try running.withLock { running -> ChildProcess.Running? in
                        guard !running.stopped else { return nil }
                        running.child = try ChildProcess.startSharingOutput(
                            ["/bin/sh", "-c", command], environment: environment)
                        return running.child
                    }
                    guard let child = started else { return }
                    let status = child.waitUntilExit()
                    let stopped = running.withLock { running in
                        running.child = nil
                        return running.stopped
                    }
                    if status != 0, !stopped {
                        printError("note: the command ended with status \(status) for message \(entry.notificationId)")
                    }
                } catch {
                    printError("note: \(error)")
                }
            }
        }
    }

    /// Ends the command under way (SIGTERM to it and what it started) and runs it for no
    /// other message.
    func stop() {
        running.withLock { running in
            running.stopped = true
            running.child?.signal(SIGTERM)
        }
    }
}
