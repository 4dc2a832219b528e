import ArgumentParser
import BreakingNewsKit
import Foundation

/// The `breaking-news` command.
@main
struct BreakingNews: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "breaking-news",
            abstract: "Breaking news by category through Notification Hubs, in your terminal.",
            discussion: (try? NewsCatalog.load().helpText) ?? "",
            version: "1.0.0",
            subcommands: [
                UICommand.self, SubscribeCommand.self, CategoriesCommand.self, SendCommand.self, LogCommand.self,
                InstallationCommand.self,
                TokenCommand.self, HubCommand.self,
            ],
            defaultSubcommand: UICommand.self
        )
    }

    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    /// Ends the process for `error`: usage errors exit 2, product errors with their own code
    /// and one line on standard error, never a stack trace.
    static func exit(withError error: Error) -> Never {
        if let failure = error as? CommandFailure {
            printError("breaking-news: \(failure.message)")
            Foundation.exit(failure.exitCode.rawValue)
        }
        let code = exitCode(for: error)
        if code == .validationFailure {
            // One line: what is wrong and where help is.
            let line = message(for: error).split(separator: "\n").first.map(String.init) ?? "invalid arguments"
            printError("breaking-news: \(line) (see 'breaking-news help')")
            Foundation.exit(ExitStatus.usage.rawValue)
        }
        let message = fullMessage(for: error)
        if code.isSuccess {
            if !message.isEmpty { say(message) }
            Foundation.exit(0)
        }
        if !message.isEmpty { printError("breaking-news: \(message)", keepingLines: true) }
        Foundation.exit(code.rawValue)
    }
}
