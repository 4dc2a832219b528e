import NewsCommandLine
import NotificationHubs

extension CommandFailure {
    /// Maps a hub call's failure to a message that says what to do next.
    static func hub(_ error: HubError, action: String) -> CommandFailure {
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
