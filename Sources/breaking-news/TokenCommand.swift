import ArgumentParser
import BreakingNewsKit
import Foundation
import NewsCommandLine
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

    /// The longest lifetime a token is made with: ten years.
    static let maximumExpiry = 10 * 366 * 86_400

    func validate() throws {
        guard (1...Self.maximumExpiry).contains(expiry) else {
            throw ValidationError("--expiry must be 1 to \(Self.maximumExpiry) seconds (ten years)")
        }
    }

    func run() async throws {
        let endpoint = try await hubFlags.endpoint(paths: Paths())
        say(
            SharedAccessSignature.make(
                resource: endpoint.hubURL, keyName: endpoint.listen.keyName, key: endpoint.listen.key,
                lifetime: TimeInterval(expiry)))
    }
}
