import BreakingNewsKit
import Foundation
import NewsTerminal

// The terminal UI as a program of its own: `breaking-news` (with no arguments, or `ui`)
// runs it. It links neither the hub nor the command-line parser, so the screen that stays
// open all day starts faster and keeps less in memory.

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("breaking-news: \(message)\n".utf8))
    exit(status)
}

var options = HubOptions()
var mouse = false
var arguments = CommandLine.arguments.dropFirst()
if arguments.first == "ui" { arguments = arguments.dropFirst() }
while let argument = arguments.popFirst() {
    func value() -> String {
        guard let next = arguments.popFirst() else { fail("\(argument) needs a value (see 'breaking-news help ui')", status: 2) }
        return next
    }
    switch argument {
    case "--mouse": mouse = true
    case "--connection-string": options.connectionString = value()
    case "--send-connection-string": options.sendConnectionString = value()
    case "--hub": options.hub = value()
    default: fail("unknown argument '\(argument)' (see 'breaking-news help ui')", status: 2)
    }
}
guard isatty(STDIN_FILENO) != 0, isatty(STDOUT_FILENO) != 0 else {
    fail("the terminal UI needs a terminal; use the subscribe, send and log commands in scripts", status: 2)
}
let profile: NewsProfile
do {
    profile = try NewsProfile(catalog: try NewsCatalog.load())
} catch {
    fail("\(error)", status: 1)
}
let app = TerminalApp(profile: profile, hubOptions: options)
exit(await app.run(mouse: mouse))
