import Foundation
import PostgresNIO
import Synchronization

/// Whether the database answers, and how long an operation may wait for it. While the
/// database is down, the client's pool keeps an operation waiting for a connection as long
/// as it takes; a request to the hub must instead get its 503 soon. But a slow operation on
/// a busy machine is not an outage: an operation fails as unavailable only once the database
/// has answered nothing at all, to any operation of this process on that server, for
/// `silence` (the nodes' own polls ask it something every second). After that, until one
/// succeeds again, operations wait only `impatience`. None waits more than `longest`.
final class Reachability: Sendable {
    /// What is known of one server, shared by every store of the process on it.
    private final class Liveness: Sendable {
        let reachable = Atomic<Bool>(true)
        /// When it last answered (`DispatchTime` nanoseconds).
        let lastAnswer = Atomic<UInt64>(DispatchTime.now().uptimeNanoseconds)
    }

    private static let servers = Mutex<[String: Liveness]>([:])
    private let liveness: Liveness

    /// - Parameter server: `host:port`.
    init(server: String) {
        liveness = Self.servers.withLock { servers in
            if let known = servers[server] { return known }
            let made = Liveness()
            servers[server] = made
            return made
        }
    }

    static let silence = 5.0
    static let impatience = 1.0
    static let longest = 60.0

    /// The caller's continuation, resumed once: by the operation or by its deadline.
    private final class Outcome<T: Sendable>: Sendable {
        let waiting = Mutex<CheckedContinuation<T, Error>?>(nil)
    }

    func withDeadline<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let started = DispatchTime.now().uptimeNanoseconds
        let outcome = Outcome<T>()
        let liveness = liveness
        return try await withCheckedThrowingContinuation { continuation in
            outcome.waiting.withLock { $0 = continuation }
            let work = Task {
                let result: Result<T, Error>
                do {
                    result = .success(try await body())
                } catch {
                    result = .failure(error)
                }
                if case .success = result {
                    liveness.lastAnswer.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
                    liveness.reachable.store(true, ordering: .relaxed)
                }
                outcome.waiting.withLock { $0.take() }?.resume(with: result)
            }
            Task {
                while true {
                    let quiet = liveness.reachable.load(ordering: .relaxed) ? Self.silence : Self.impatience
                    let heard = max(started, liveness.lastAnswer.load(ordering: .relaxed))
                    let deadline = min(heard + UInt64(quiet * 1e9), started + UInt64(Self.longest * 1e9))
                    let now = DispatchTime.now().uptimeNanoseconds
                    if now < deadline {
                        try? await Task.sleep(nanoseconds: deadline - now)
                        if outcome.waiting.withLock({ $0 == nil }) { return }
                        continue
                    }
                    guard let waiting = outcome.waiting.withLock({ $0.take() }) else { return }
                    liveness.reachable.store(false, ordering: .relaxed)
                    work.cancel()
                    waiting.resume(
                        throwing: StoreUnavailable(
                            description: "the database answered nothing for \(Int(quiet)) s"))
                    return
                }
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

    /// `password`, when given, is used in place of any the URL holds.
    init(_ url: String, password: String? = nil) throws {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty
        else {
            throw StoreFailure(
                description: "'\(PostgresHubStore.redacted(url))' is not a postgres://user@host:port/database URL")
        }
        let database = String(components.path.drop { $0 == "/" })
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
            password: password ?? components.password, database: database.isEmpty ? nil : database, tls: .disable)
        if components.queryItems?.contains(where: { $0.name == "sslmode" && $0.value == "require" }) == true {
            configuration.tls = .require(.makeClientConfiguration())
        }
        configuration.options.connectTimeout = .seconds(5)
        // Every commit waits for the disk, whatever the server's default: a 201 is durable.
        configuration.options.additionalStartupParameters = [("synchronous_commit", "on")]
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
