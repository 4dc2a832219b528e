import ArgumentParser
import BreakingNewsKit
import Foundation
import NotificationHubs

/// `breaking-news token`: prints an `Authorization` header value for the hub.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a SAS Authorization header value for a hub (the tutorial's \"verify the SAS token\" step).",
        discussion: "The token is signed with the connection string's key; without one, with the local hub's Listen key."
    )

    @OptionGroup var hubFlags: HubFlags

    @Option(help: "Lifetime of the token in seconds.")
    var expiry: Int = 3600

    func validate() throws {
        guard expiry > 0 else { throw ValidationError("--expiry must be a positive number of seconds") }
    }

    func run() async throws {
        let endpoint = try await hubFlags.endpoint(paths: Paths())
        say(
            SharedAccessSignature.make(
                resource: endpoint.hubURL, keyName: endpoint.listen.keyName, key: endpoint.listen.key,
                lifetime: TimeInterval(expiry)))
    }
}
