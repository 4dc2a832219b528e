import Foundation
import NotificationHubs

/// The store cannot be reached now: its database is down, restarting or out of connections.
/// Requests that need it are answered 503 with `Retry-After`; the hub recovers by itself
/// once the database is back.
public struct StoreUnavailable: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// The store refused an operation for a reason a retry would not mend.
public struct StoreFailure: Error, CustomStringConvertible, Sendable {
    public let description: String
}
