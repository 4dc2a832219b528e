import ArgumentParser
import BreakingNewsKit
import Foundation
import NewsTerminal

/// `breaking-news` (or `breaking-news ui`): the terminal UI.
struct UICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ui", abstract: "Open the terminal UI: category switches, compose and send, received log (the default).")

    @Flag(help: "Let the mouse click tabs and switches.")
    var mouse = false

    @OptionGroup var hubFlags: HubFlags

    func run() async throws {
        guard isatty(STDIN_FILENO) != 0, isatty(STDOUT_FILENO) != 0 else {
            throw CommandFailure.usage("the terminal UI needs a terminal; use the subscribe, send and log commands in scripts")
        }
        let profile = try openProfile(printingWarning: false)
        let status = await TerminalApp(profile: profile, hubOptions: hubFlags.options).run(mouse: mouse)
        if status != 0 { throw ExitCode(status) }
    }
}
