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
                UICommand.self, SubscribeCommand.self, CategoriesCommand.self, SendCommand.self, LogCommand.self,
                InstallationCommand.self,
                TokenCommand.self, HubCommand.self,
            ],
            defaultSubcommand: UICommand.self
        )
    }

    static func main() async {
        await runAsProgram(help: "breaking-news help")
    }
}
