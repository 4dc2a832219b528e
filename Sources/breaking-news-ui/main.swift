import ArgumentParser
import BreakingNewsKit
import Foundation
import NewsCommandLine
import NewsTerminal

// The terminal UI as a program of its own: `breaking-news` (with no arguments, or `ui`)
// runs it. It does not link the hub, so the screen that stays open all day starts faster
// and keeps less in memory. Its flags are `breaking-news ui`'s (NewsCommandLine).

struct BreakingNewsUI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "breaking-news ui", abstract: "The terminal UI: category switches, compose and send, received log.",
        discussion: UIFlags.discussion)

    @OptionGroup var flags: UIFlags

    func run() async throws {
        try flags.requireTerminal { TerminalType.problem() }
        let profile = try openProfile(printingWarning: false)
        let status = await TerminalApp(profile: profile, hubOptions: flags.hub.options).run(mouse: flags.mouse)
        if status != 0 { throw ExitCode(status) }
    }
}

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "ui" { arguments.removeFirst() }
await BreakingNewsUI.runAsProgram(arguments, help: "breaking-news help ui")
