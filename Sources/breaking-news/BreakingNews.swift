import ArgumentParser
import BreakingNewsKit
import Foundation
import NewsCommandLine

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
                UICommand.self, SubscribeCommand.self, UnregisterCommand.self, CategoriesCommand.self, SendCommand.self,
                LogCommand.self,
                InstallationCommand.self,
                TokenCommand.self, ExplainCommand.self, HubCommand.self,
            ],
            defaultSubcommand: UICommand.self
        )
    }

    static func main() async {
        // The UI, the common case, goes to its lean program before anything is parsed here:
        // that program parses and checks the same flags, and this one's parse is half its
        // launch (the runtime's first look-ups of commands and conformances in a large binary).
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.isEmpty || arguments.first == "ui" { UICommand.execLeanProgram(arguments) }
        await runAsProgram(help: "breaking-news help")
    }
}
