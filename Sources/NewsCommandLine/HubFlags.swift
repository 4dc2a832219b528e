import ArgumentParser
import BreakingNewsKit
import Foundation

/// The flags that choose a hub other than the embedded local one, shared by every command
/// and by the UI program.
public struct HubFlags: ParsableArguments, Sendable {
    @Option(
        name: .customLong("connection-string"),
        help: "A Notification Hubs connection string (or BREAKING_NEWS_CONNECTION_STRING); the Listen key is enough to register.")
    public var connectionString: String?

    @Option(
        name: .customLong("send-connection-string"),
        help: "A connection string with Send rights, for sending (or BREAKING_NEWS_SEND_CONNECTION_STRING).")
    public var sendConnectionString: String?

    @Option(help: "The hub name (or BREAKING_NEWS_HUB, or the connection string's EntityPath).")
    public var hub: String?

    public init() {}

    public var options: HubOptions {
        HubOptions(connectionString: connectionString, sendConnectionString: sendConnectionString, hub: hub)
    }

    /// The flags as arguments again, to hand to another program.
    public var arguments: [String] {
        var result: [String] = []
        if let connectionString { result += ["--connection-string", connectionString] }
        if let sendConnectionString { result += ["--send-connection-string", sendConnectionString] }
        if let hub { result += ["--hub", hub] }
        return result
    }

    /// The hub to talk to; starts the embedded one when needed.
    public func endpoint(paths: Paths) async throws -> HubEndpoint {
        do {
            return try await HubEndpoint.resolve(options, paths: paths)
        } catch {
            switch error.kind {
            case .usage: throw CommandFailure.usage(error.description)
            case .rejected: throw CommandFailure.rejected(error.description)
            case .unreachable: throw CommandFailure(error.description, exitCode: .hubUnreachable)
            }
        }
    }
}

/// The terminal UI's flags: `breaking-news ui` and the UI program take the same ones.
public struct UIFlags: ParsableArguments, Sendable {
    /// What `--help` of both UI programs says about the keys.
    public static let discussion = """
        Keys: ? shows them all; the manual's key table lists them. In the message field Enter \
        sends, Alt-Enter starts a new line, ↑ (and Ctrl-P / Ctrl-N) recalls the last 100 sends, \
        Ctrl-X Ctrl-E writes the message in $VISUAL or $EDITOR. y copies into tmux's buffer \
        inside tmux, else with OSC 52, or with config.json's "copyCommand".
        """

    @Flag(help: "Let the mouse click tabs and switches.")
    public var mouse = false

    @OptionGroup public var hub: HubFlags

    public init() {}

    /// The flags as arguments again, to hand to the UI program.
    public var arguments: [String] { (mouse ? ["--mouse"] : []) + hub.arguments }

    /// Refuses to draw on something that is not a terminal, or on a terminal type that
    /// `problem` (the terminal library's check, given by the program) says cannot show the UI.
    public func requireTerminal(problem: () -> String?) throws {
        guard isatty(STDIN_FILENO) != 0, isatty(STDOUT_FILENO) != 0 else {
            throw CommandFailure.usage("the terminal UI needs a terminal; use the subscribe, send and log commands in scripts")
        }
        if let problem = problem() { throw CommandFailure.usage(problem) }
    }
}
