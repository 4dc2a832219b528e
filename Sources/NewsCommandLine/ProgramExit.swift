import ArgumentParser
import Foundation

extension ParsableCommand {
    /// Parses the arguments and runs the command they name; any error ends the process
    /// through `finish(withError:help:)`.
    public static func runAsProgram(_ arguments: [String]? = nil, help: String) async -> Never {
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            Foundation.exit(ExitStatus.ok.rawValue)
        } catch {
            finish(withError: error, help: help)
        }
    }

    /// Ends the process for `error`: usage errors exit 2 with one line naming `help`,
    /// product errors with their own code and one line on standard error, never a stack trace.
    public static func finish(withError error: Error, help: String) -> Never {
        if let failure = error as? CommandFailure {
            printError("breaking-news: \(failure.message)")
            Foundation.exit(failure.exitCode.rawValue)
        }
        let code = exitCode(for: error)
        if code == .validationFailure {
            // One line: what is wrong and where help is.
            let line = message(for: error).split(separator: "\n").first.map(String.init) ?? "invalid arguments"
            printError("breaking-news: \(line) (see '\(help)')")
            Foundation.exit(ExitStatus.usage.rawValue)
        }
        let message = fullMessage(for: error)
        if code.isSuccess {
            if !message.isEmpty { say(message) }
            Foundation.exit(ExitStatus.ok.rawValue)
        }
        if !message.isEmpty { printError("breaking-news: \(message)", keepingLines: true) }
        Foundation.exit(code.rawValue)
    }
}
