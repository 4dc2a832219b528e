import BreakingNewsKit
import Foundation

/// Exit codes of both programs (the README lists them).
public enum ExitStatus: Int32, Sendable {
    case ok = 0
    case failure = 1
    case usage = 2
    case hubUnreachable = 3
    case refusedByAuth = 4
    case inputRejected = 5
}

/// An error that ends a command with a one-line message and a chosen exit code.
public struct CommandFailure: Error, Sendable {
    public let message: String
    public let exitCode: ExitStatus

    public init(_ message: String, exitCode: ExitStatus) {
        self.message = message
        self.exitCode = exitCode
    }

    public static func usage(_ message: String) -> CommandFailure { CommandFailure(message, exitCode: .usage) }
    public static func rejected(_ message: String) -> CommandFailure { CommandFailure(message, exitCode: .inputRejected) }
}
