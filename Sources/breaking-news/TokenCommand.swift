import ArgumentParser
import BreakingNewsKit
import Foundation
import NotificationHubs

/// `breaking-news token`: prints an `Authorization` header value for the hub.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a SAS Authorization header value for a hub (the tutorial's \"verify the SAS token\" step).",
        discussion: "Without --connection-string, the token is for the local hub's Listen rule."
    )

    @Option(
        name: .customLong("connection-string"),
        help: "A Notification Hubs connection string (or BREAKING_NEWS_CONNECTION_STRING).")
    var connectionString: String?

    @Option(help: "The hub name (or BREAKING_NEWS_HUB, or the connection string's EntityPath).")
    var hub: String?

    @Option(help: "Lifetime of the token in seconds.")
    var expiry: Int = 3600

    func validate() throws {
        guard expiry > 0 else { throw ValidationError("--expiry must be a positive number of seconds") }
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let text = connectionString ?? environment["BREAKING_NEWS_CONNECTION_STRING"] else {
            // No connection string: the embedded hub's Listen key.
            let endpoint = try await HubFlags().endpoint(paths: Paths())
            print(
                SharedAccessSignature.make(
                    resource: endpoint.hubURL, keyName: endpoint.listen.keyName, key: endpoint.listen.key,
                    lifetime: TimeInterval(expiry)))
            return
        }
        let parsed: ConnectionString
        do {
            parsed = try ConnectionString(parsing: text)
        } catch {
            throw CommandFailure.rejected(error.description)
        }
        guard let hubName = hub ?? environment["BREAKING_NEWS_HUB"] ?? parsed.entityPath else {
            throw CommandFailure.usage("give --hub (or set BREAKING_NEWS_HUB, or add EntityPath to the connection string)")
        }
        print(
            SharedAccessSignature.make(
                resource: parsed.hubURL(hubName), keyName: parsed.keyName, key: parsed.key, lifetime: TimeInterval(expiry)))
    }
}
