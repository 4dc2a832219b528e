import BreakingNewsKit
import Foundation
import NotificationHubs

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

    /// Maps a hub call's failure to a message that says what to do next.
    public static func hub(_ error: HubError, action: String) -> CommandFailure {
        if error.isUnreachable {
            return CommandFailure(
                "\(action) failed: \(error). Is the hub running? Try 'breaking-news hub status'.", exitCode: .hubUnreachable)
        }
        if error.isAuthorizationFailure {
            return CommandFailure(
                "\(action) was refused (\(error.status ?? 0)): \(error.detail). Check the connection string's key and its rights.",
                exitCode: .refusedByAuth)
        }
        if let status = error.status, (400..<500).contains(status) {
            return CommandFailure("\(action) was rejected (\(status)): \(error.detail)", exitCode: .inputRejected)
        }
        return CommandFailure("\(action) failed: \(error)", exitCode: .failure)
    }
}
