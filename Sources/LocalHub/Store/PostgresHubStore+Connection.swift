import Foundation
import PostgresNIO
import Synchronization

/// Whether the database answered lately, and the deadline that follows from it. While the
/// database is down, the client's pool keeps a request waiting for a connection as long as
/// it takes; a request to the hub must instead get its 503 soon. An operation that misses
/// its deadline is cancelled and reported unavailable, and later ones wait only briefly
/// until one succeeds again (the nodes' own polls, each second, find that out).
final class Reachability: Sendable {
    private let reachable = Atomic<Bool>(true)

    /// The most an operation waits while the database answers: a loaded database is slow,
    /// not gone; but a request waits for this (and the writer's batch ahead of it) before its
    /// 503 when the database has just gone away.
    static let patience = 5.0
    /// The most it waits once one has missed its deadline, until one succeeds.
    static let impatience = 1.0

    /// The caller's continuation, resumed once: by the operation or by its deadline.
    private final class Outcome<T: Sendable>: Sendable {
        let waiting = Mutex<CheckedContinuation<T, Error>?>(nil)
    }

    func withDeadline<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let seconds = reachable.load(ordering: .relaxed) ? Self.patience : Self.impatience
        let outcome = Outcome<T>()
        return try await withCheckedThrowingContinuation { continuation in
            outcome.waiting.withLock { $0 = continuation }
            let work = Task {
                let result: Result<T, Error>
                do {
                    result = .success(try await body())
                } catch {
                    result = .failure(error)
                }
                if case .success = result { self.reachable.store(true, ordering: .relaxed) }
                outcome.waiting.withLock { $0.take() }?.resume(with: result)
            }
            Task {
                try? await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
                guard let waiting = outcome.waiting.withLock({ $0.take() }) else { return }
                self.reachable.store(false, ordering: .relaxed)
                work.cancel()
                waiting.resume(throwing: StoreUnavailable(description: "the database did not answer within \(Int(seconds)) s"))
            }
        }
    }
}

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
            if let inner = inner as? PSQLError, let unavailable = StoreUnavailable(inner) { throw unavailable }
            if let inner = inner as? StoreUnavailable { throw inner }
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

    init(_ url: String) throws {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty
        else {
            throw StoreFailure(
                description: "'\(PostgresHubStore.redacted(url))' is not a postgres://user@host:port/database URL")
        }
        let database = String(components.path.drop { $0 == "/" })
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password, database: database.isEmpty ? nil : database, tls: .disable)
        if components.queryItems?.contains(where: { $0.name == "sslmode" && $0.value == "require" }) == true {
            configuration.tls = .require(.makeClientConfiguration())
        }
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.maximumConnections = 16
        self.configuration = configuration
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
    init(_ error: PSQLError) {
        let message = error.serverInfo?[.message] ?? "\(error.code)"
        self.init(description: "the database refused a statement: \(message)")
    }
}
