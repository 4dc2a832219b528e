import ArgumentParser
import BreakingNewsKit
import Foundation
import NewsCommandLine
import NewsTerminal

/// `breaking-news` (or `breaking-news ui`): the terminal UI.
struct UICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ui", abstract: "Open the terminal UI: category switches, compose and send, received log (the default).",
        discussion: UIFlags.discussion)

    @OptionGroup var flags: UIFlags

    func run() async throws {
        try flags.requireTerminal { TerminalType.problem() }
        Self.execLeanProgram(flags.arguments)
        let profile = try openProfile(printingWarning: false)
        let status = await TerminalApp(profile: profile, hubOptions: flags.hub.options).run(mouse: flags.mouse)
        if status != 0 { throw ExitCode(status) }
    }
}

extension UICommand {
    /// Replaces this process with `breaking-news-ui` when it sits beside this binary: the
    /// same screen, from a program that does not link the hub, so it keeps less resident all
    /// day. Without it, the UI runs here. `arguments` are the UI's (a leading `ui` may stay:
    /// that program skips it).
    static func execLeanProgram(_ arguments: [String]) {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let lean = me.deletingLastPathComponent().appendingPathComponent("breaking-news-ui").path
        guard FileManager.default.isExecutableFile(atPath: lean) else { return }
        let cArguments = ([lean] + arguments).map { strdup($0) } + [nil]
        execv(lean, cArguments)
        // execv returns only on failure: fall back to running the UI in this process.
        cArguments.forEach { free($0) }
    }
}
