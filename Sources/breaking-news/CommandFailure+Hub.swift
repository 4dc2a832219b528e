import NewsCommandLine
import NotificationHubs

extension CommandFailure {
    /// Maps a hub call's failure to a message that says what to do next.
    static func hub(_ error: HubError, action: String) -> CommandFailure {
        if error.isUnreachable {
            return CommandFailure(
                "\(action) failed: \(error). Is the hub running? Try 'breaking-news hub status'.", exitCode: .hubUnreachable)
        }
        // 401 is the token; 403 is its rights only when the hub says a claim is missing (a
        // full hub also answers 403, and its detail says what is full).
        if error.status == 401 || (error.status == 403 && error.detail.contains("claim is required")) {
            return CommandFailure(
                "\(action) was refused (\(error.status ?? 0)): \(error.detail). Check the connection string's key and its rights.",
                exitCode: .refusedByAuth)
        }
        if error.status == 429 {
            return CommandFailure("\(action) was refused for now (429): \(error.detail)", exitCode: .failure)
        }
        if let status = error.status, (400..<500).contains(status) {
            return CommandFailure("\(action) was rejected (\(status)): \(error.detail)", exitCode: .inputRejected)
        }
        return CommandFailure("\(action) failed: \(error)", exitCode: .failure)
    }
}
