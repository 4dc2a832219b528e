import Foundation
import GRDB
import NotificationHubs

/// The store cannot be reached now: its database is down, restarting or out of connections.
/// Requests that need it are answered 503 with `Retry-After`; the hub recovers by itself
/// once the database is back.
public struct StoreUnavailable: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// What kind of problem a probe of the database met, when it met one: what a line for
    /// anyone (`/healthz`) may say, where `description` (for the log) names the server, the
    /// role and the database.
    public var kind: DatabaseProblem.Kind?

    public init(description: String, kind: DatabaseProblem.Kind? = nil) {
        self.description = description
        self.kind = kind
    }
}

/// The store refused an operation. `permanent` when a retry cannot mend it: a value out of
/// range, a constraint the write breaks, a row that does not decode; otherwise (a deadlock,
/// a lock that waited too long) the same operation may pass when tried again.
public struct StoreFailure: Error, CustomStringConvertible, Sendable {
    public let description: String
    public var permanent = false

    public init(description: String, permanent: Bool = false) {
        self.description = description
        self.permanent = permanent
    }
}

extension StoreFailure {
    /// Whether trying `error` again cannot mend it. A database that does not answer is never
    /// such an error: it comes back. The dispatch of a send that meets one ends `Abandoned`
    /// with the reason, where retrying it would hold every later send back for ever.
    static func isPermanent(_ error: any Error) -> Bool {
        switch error {
        case is StoreUnavailable: return false
        case let failure as StoreFailure: return failure.permanent
        case is QuarantineReason, is RowDecodingError: return true
        case let error as DatabaseError:
            return [.SQLITE_CONSTRAINT, .SQLITE_MISMATCH, .SQLITE_TOOBIG, .SQLITE_RANGE].contains(error.resultCode)
        default: return false
        }
    }
}
