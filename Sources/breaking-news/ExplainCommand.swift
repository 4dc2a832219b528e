import ArgumentParser
import BreakingNewsKit
import Foundation
import NewsCommandLine
import NotificationHubs

/// `breaking-news explain ID`: why a send reached whom it reached (the local hub only).
struct ExplainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Explain a send: what it matched, the near misses, the payload check, each device's outcome.",
        discussion: """
            ID is the notification id 'send' prints. Needs the Full (Manage) key, which the
            local hub's own connection strings have; Azure hubs offer no such explanation.
            """)

    @Argument(help: "The notification id.")
    var id: String

    @Flag(name: .shortAndLong, help: "Print JSON.")
    var json = false

    @OptionGroup var hubFlags: HubFlags

    func validate() throws {
        guard !id.isEmpty, id.utf8.count <= 200, id.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw ValidationError("a notification id is printable ASCII without spaces, as 'send' prints it")
        }
    }

    func run() async throws {
        let profile = try openProfile()
        let endpoint = try await hubFlags.endpoint(paths: profile.paths)
        let explanation: SendExplanation
        do {
            explanation = try await endpoint.sendClient().explain(id: id)
        } catch {
            if error.status == 404 {
                throw CommandFailure(
                    "the hub has no send '\(id)' to explain (an Azure hub explains none)", exitCode: .inputRejected)
            }
            throw CommandFailure.hub(error, action: "Explaining", doing: .explaining, embedded: endpoint.isEmbedded)
        }
        if json {
            say(explanation.json.prettyText)
        } else {
            for line in Explanation.lines(explanation) { say(line) }
        }
    }
}
