import Foundation
import Logging
import NIOSSL
import PostgresNIO

extension PostgresHubStore {
    /// Runs `body`, turning a lost or refused connection into `StoreUnavailable`.
    static func withStoreErrors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PSQLError {
            if let unavailable = StoreUnavailable(error) { throw unavailable }
            throw StoreFailure(error)
        } catch let error as PostgresTransactionError {
            let inner = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError
            if let inner = inner as? PSQLError { throw StoreUnavailable(inner) ?? StoreFailure(inner) }
            if let inner = inner as? StoreUnavailable { throw inner }
            if let inner = inner as? StoreFailure { throw inner }
            if let inner = inner as? QuarantineReason { throw inner }
            throw StoreFailure(description: String(reflecting: inner ?? error))
        }
    }
}

extension PostgresHubStore {
    /// The URL as logs and errors may show it: its password replaced by `***`.
    public static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? "(a postgres:// URL)"
    }
}

/// Where a PostgreSQL store is: a `postgres://` URL taken apart.
struct PostgresLocation {
    let configuration: PostgresClient.Configuration

    /// `password`, when given, is used in place of any the URL holds.
    init(_ url: String, password: String? = nil) throws {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty
        else {
            throw StoreFailure(
                description: "'\(PostgresHubStore.redacted(url))' is not a postgres://user@host:port/database URL")
        }
        let database = String(components.path.drop { $0 == "/" })
        let (port, user) = (components.port ?? 5432, components.user ?? "postgres")
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: user, password: password ?? components.password,
            database: database.isEmpty ? nil : database, tls: .disable)
        if components.queryItems?.contains(where: { $0.name == "sslmode" && $0.value == "require" }) == true {
            configuration.tls = .require(.makeClientConfiguration())
        }
        configuration.options.connectTimeout = .seconds(5)
        // Every commit waits for the disk, whatever the server's default: a 201 is durable.
        // Every transaction reads what was committed before each statement, whatever the
        // database's or role's default: the numbering under locks and the check of a write
        // at its commit read what committed while they waited, and a stricter level could
        // also fail a commit after its answer had come.
        configuration.options.additionalStartupParameters = [
            ("synchronous_commit", "on"), ("default_transaction_isolation", "read committed"),
        ]
        configuration.options.maximumConnections = 16
        // An idle connection of the pool is asked `SELECT 1` now and then, so that one the
        // server or the way to it dropped is found and replaced before an operation leases it.
        configuration.options.keepAliveBehavior = .init(frequency: .seconds(30), query: "SELECT 1")
        self.configuration = configuration
    }

    /// How long operations through `client` may wait, probing the server through the same pool.
    func reachability(client: PostgresClient, logger: Logger) -> Reachability {
        Reachability(probe: PostgresPoolProbe(client: client, logger: logger), logger: logger)
    }
}

/// `SELECT 1` on a connection of the pool (no connection is opened beside it): an idle one
/// when there is one, else one the pool opens for it, up to its maximum.
struct PostgresPoolProbe: ReachabilityProbe {
    let client: PostgresClient
    let logger: Logger

    func ask() async throws {
        try await client.withCancellableConnection { connection in
            _ = try await connection.query("SELECT 1", logger: logger).collect()
        }
    }
}

extension PostgresClient {
    /// `body` on a connection of the pool, which is closed if the task is cancelled while
    /// `body` runs: a statement sent waits for its answer whatever cancellation says, and a
    /// caller cancelled (gone, or past its deadline) stops waiting at once. The pool opens
    /// another in its place; a transaction left open on it is rolled back by the server.
    func withCancellableConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await withConnection { connection in
            try await withTaskCancellationHandler {
                try await body(connection)
            } onCancel: {
                let closing: EventLoopFuture<Void> = connection.close()
                closing.whenComplete { _ in }
            }
        }
    }
}

extension StoreUnavailable {
    /// The error as unavailability when it is one: no connection, a connection lost, or a
    /// server shutting down or starting; nil for errors a retry would not mend.
    init?(_ error: PSQLError) {
        switch error.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .poolClosed, .uncleanShutdown:
            self.init(description: "the database is not reachable (\(error.code))")
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            guard state.hasPrefix("08") || state.hasPrefix("57P") || state == "53300" else { return nil }
            self.init(description: "the database is not available (SQLSTATE \(state))")
        default:
            return nil
        }
    }
}

extension StoreFailure {
    /// A refusal of the server: permanent for a data exception (a value out of range, a
    /// text that is no number: SQLSTATE class 22) or a constraint the write breaks (23).
    init(_ error: PSQLError) {
        let message = error.serverInfo?[.message] ?? "\(error.code)"
        let state = error.serverInfo?[.sqlState] ?? ""
        self.init(
            description: "the database refused a statement: \(message)",
            permanent: state.hasPrefix("22") || state.hasPrefix("23"))
    }
}
