import ArgumentParser
import BreakingNewsKit
import Foundation
import NotificationHubs

/// The flags that choose a hub other than the embedded local one.
struct HubFlags: ParsableArguments {
    @Option(
        name: .customLong("connection-string"),
        help: "A Notification Hubs connection string (or BREAKING_NEWS_CONNECTION_STRING); the Listen key is enough to register.")
    var connectionString: String?

    @Option(
        name: .customLong("send-connection-string"),
        help: "A connection string with Send rights, for sending (or BREAKING_NEWS_SEND_CONNECTION_STRING).")
    var sendConnectionString: String?

    @Option(help: "The hub name (or BREAKING_NEWS_HUB, or the connection string's EntityPath).")
    var hub: String?

    var options: HubOptions {
        HubOptions(connectionString: connectionString, sendConnectionString: sendConnectionString, hub: hub)
    }

    /// The hub to talk to; starts the embedded one when needed.
    func endpoint(paths: Paths) async throws -> HubEndpoint {
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

/// The local side of every command, with its warning (a corrupt defaults file) printed once.
func openProfile(printingWarning: Bool = true) throws -> NewsProfile {
    let catalog: NewsCatalog
    do {
        catalog = try NewsCatalog.load()
    } catch {
        throw CommandFailure("\(error)", exitCode: .failure)
    }
    let profile: NewsProfile
    do {
        profile = try NewsProfile(catalog: catalog)
    } catch {
        throw CommandFailure("cannot open the user defaults: \(error.localizedDescription)", exitCode: .failure)
    }
    if printingWarning, let warning = profile.warning { printError("warning: \(warning)") }
    return profile
}

/// Prints to standard output; what came from the network cannot drive the terminal.
func say(_ text: String) {
    print(TerminalText.lines(text))
}

/// Prints one message to standard error, as safely as `say`, on one line (a hub's error
/// detail may hold line breaks; it cannot make more lines of its own) unless `keepingLines`.
func printError(_ text: String, keepingLines: Bool = false) {
    let safe = keepingLines ? TerminalText.lines(text) : TerminalText.line(text)
    FileHandle.standardError.write(Data((safe + "\n").utf8))
}

/// Local time of a W3C date, `HH:mm:ss` (with the date when it is not today).
func displayTime(_ w3c: String) -> String { DisplayTime.short(w3c) }
