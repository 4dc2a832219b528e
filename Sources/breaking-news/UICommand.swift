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
        execLeanProgram()
        let profile = try openProfile(printingWarning: false)
        let status = await TerminalApp(profile: profile, hubOptions: hubFlags.options).run(mouse: mouse)
        if status != 0 { throw ExitCode(status) }
    }
}

extension UICommand {
    /// Replaces this process with `breaking-news-ui` when it sits beside this binary: the
    /// same screen, from a program that links neither the hub nor the argument parser, so it
    /// keeps less resident all day. Without it, the UI runs here.
    func execLeanProgram() {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let lean = me.deletingLastPathComponent().appendingPathComponent("breaking-news-ui").path
        guard FileManager.default.isExecutableFile(atPath: lean) else { return }
        var arguments = [lean]
        if mouse { arguments.append("--mouse") }
        if let value = hubFlags.connectionString { arguments += ["--connection-string", value] }
        if let value = hubFlags.sendConnectionString { arguments += ["--send-connection-string", value] }
        if let value = hubFlags.hub { arguments += ["--hub", value] }
        let cArguments = arguments.map { strdup($0) } + [nil]
        execv(lean, cArguments)
        // execv returns only on failure: fall back to running the UI in this process.
        cArguments.forEach { free($0) }
    }
}
