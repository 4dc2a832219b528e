import Foundation
import Logging
import NIOSSL
import PostgresNIO
import Synchronization

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
    /// The same server and database for a connection of its own, outside the pool: the
    /// reachability probe's (`Reachability`).
    let probe: PostgresConnection.Configuration

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
        var probe = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password ?? components.password,
            database: database.isEmpty ? nil : database, tls: .disable)
        if components.queryItems?.contains(where: { $0.name == "sslmode" && $0.value == "require" }) == true {
            configuration.tls = .require(.makeClientConfiguration())
            do {
                probe.tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            } catch {
                throw StoreFailure(description: "cannot set up TLS for the database: \(error)")
            }
        }
        probe.options.connectTimeout = .milliseconds(Int64(DatabaseWatchdog.Timings.standard.probeTimeout / .milliseconds(1)))
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
        // (The pool's default keep-alive asks an idle connection `SELECT 1` every 30 s, so
        // that one the server or the way to it dropped is replaced before it is leased.)
        self.configuration = configuration
        self.probe = probe
    }

    /// How long operations on this database may wait, with its probe.
    func reachability(logger: Logger) -> Reachability {
        Reachability(probe: PostgresProbe(probe, logger: logger), logger: logger)
    }
}

/// `SELECT 1` on a connection of its own, outside the pool: opened by the first probe, kept,
/// and opened again after any failure, so that a probe costs one round trip, not a new backend.
final class PostgresProbe: ReachabilityProbe {
    private let configuration: PostgresConnection.Configuration
    private let logger: Logger
    private let state = Mutex<(connection: Task<PostgresConnection, Error>?, closed: Bool)>((nil, false))

    init(_ configuration: PostgresConnection.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The connection, or a new one when there is none (or it broke); nil once closed.
    private func connection() -> Task<PostgresConnection, Error>? {
        let (configuration, logger) = (configuration, logger)
        return state.withLock { state in
            guard !state.closed else { return nil }
            if let task = state.connection { return task }
            let task = Task { try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger) }
            state.connection = task
            return task
        }
    }

    /// Asks on the kept connection; one that is closed or failed to open is opened again
    /// first.
    func ask() async throws {
        var again = true
        while true {
            guard let task = connection() else { throw CancellationError() }
            do {
                let connection = try await withTaskCancellationHandler {
                    try await task.value
                } onCancel: {
                    task.cancel()
                }
                guard !connection.isClosed else { throw ChannelError.ioOnClosedChannel }
                try await withTaskCancellationHandler {
                    _ = try await connection.query("SELECT 1", logger: logger).collect()
                } onCancel: {
                    let closing: EventLoopFuture<Void> = connection.close()
                    closing.whenComplete { _ in }
                }
                return
            } catch {
                forget(task)
                guard again, !Task.isCancelled else { throw error }
                again = false
            }
        }
    }

    private func forget(_ task: Task<PostgresConnection, Error>) {
        let forgotten = state.withLock { state -> Bool in
            guard state.connection == task else { return false }
            state.connection = nil
            return true
        }
        if forgotten { Self.close(task) }
    }

    func close() {
        let task = state.withLock { state -> Task<PostgresConnection, Error>? in
            state.closed = true
            defer { state.connection = nil }
            return state.connection
        }
        if let task { Self.close(task) }
    }

    /// Closes the connection `task` opens (or opened), holding it until it is closed.
    private static func close(_ task: Task<PostgresConnection, Error>) {
        task.cancel()
        Task {
            guard let connection = try? await task.value else { return }
            try? await connection.close()
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
