import BreakingNewsKit
import LocalHub
import NewsCommandLine
import NotificationHubs

extension CommandFailure {
    /// A hub call's failure as one line — what failed, the error once (its tracking id once),
    /// and the variable or flag that fixes it — with the exit code of its kind.
    static func hub(_ error: HubError, action: String, doing: HubProblem.Doing, embedded: Bool) -> CommandFailure {
        let line = "\(action) failed: \(HubProblem.line(error, doing: doing, embedded: embedded))"
        if error.isUnreachable { return CommandFailure(line, exitCode: .hubUnreachable) }
        // 401 is the key; 403 is its rights only when the hub says a claim is missing (a full
        // hub also answers 403, and its detail says what is full).
        if error.isRightsRefusal { return CommandFailure(line, exitCode: .refusedByAuth) }
        if let status = error.status, (400..<500).contains(status), status != 429 {
            return CommandFailure(line, exitCode: .inputRejected)
        }
        return CommandFailure(line, exitCode: .failure)
    }
}

extension CommandFailure {
    /// A PostgreSQL database that will not do, as `doing` met it, with the exit code of its
    /// kind: 3 unreachable, 4 authentication refused, 1 otherwise.
    static func database(_ problem: DatabaseProblem, doing: String) -> CommandFailure {
        let code: ExitStatus =
            switch problem.kind {
            case .unreachable: .hubUnreachable
            case .authentication: .refusedByAuth
            case .unusable: .failure
            }
        return CommandFailure("\(doing): \(problem)", exitCode: code)
    }
}
