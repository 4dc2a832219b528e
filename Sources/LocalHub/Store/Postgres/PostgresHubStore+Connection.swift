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
    /// reachability probe's (`Reachability`), and the first contact's (`meet`).
    let probe: PostgresConnection.Configuration
    /// The server, role and database, as problems name them.
    let place: DatabaseProblem.Place

    /// `password`, when given, is used in place of any the URL holds.
    init(_ url: String, password: String? = nil) throws {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty
        else {
            throw DatabaseProblem(
                .unusable, "'\(PostgresHubStore.redacted(url))' is not a postgres://user@host:port/database URL")
        }
        let database = String(components.path.drop { $0 == "/" })
        let (port, user) = (components.port ?? 5432, components.user ?? "postgres")
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: user, password: password ?? components.password,
            database: database.isEmpty ? nil : database, tls: .disable)
        var probe = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password ?? components.password,
            database: database.isEmpty ? nil : database, tls: .disable)
        if let tls = try Self.tls(components.queryItems ?? [], host: host) {
            do {
                let context = try NIOSSLContext(configuration: tls.configuration)
                configuration.tls = tls.required ? .require(tls.configuration) : .prefer(tls.configuration)
                probe.tls = tls.required ? .require(context) : .prefer(context)
            } catch {
                throw DatabaseProblem(.unusable, "cannot set up TLS for the database: \(error)")
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
        place = DatabaseProblem.Place(host: host, port: port, user: user, database: database.isEmpty ? user : database)
    }

    /// The TLS the URL's `sslmode` and `sslrootcert` ask for, as libpq reads them: none for
    /// `disable` (the default); encrypted but unchecked for `prefer` (TLS when the server
    /// offers it) and `require`; the server's certificate checked against `sslrootcert` (else
    /// the system's roots) for `verify-ca`, and its name too for `verify-full`. `require` with
    /// a `sslrootcert` checks the certificate as `verify-ca` does.
    ///
    /// postgres-nio names the server to TLS only by a host name (an address may not go in
    /// SNI), and a name never given is never checked: `verify-full` with an address is
    /// refused, not quietly weakened to `verify-ca`.
    static func tls(_ query: [URLQueryItem], host: String) throws -> (configuration: TLSConfiguration, required: Bool)? {
        let value = { (name: String) in query.last { $0.name == name }?.value.flatMap { $0.isEmpty ? nil : $0 } }
        let mode = value("sslmode") ?? "disable"
        let root = value("sslrootcert")
        for item in query where !["sslmode", "sslrootcert"].contains(item.name) {
            throw DatabaseProblem(
                .unusable, "the database URL's '\(item.name)' is not understood: it takes sslmode and sslrootcert")
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        switch mode {
        case "disable":
            guard root == nil else { throw DatabaseProblem(.unusable, "sslrootcert needs sslmode=verify-ca or verify-full") }
            return nil
        case "prefer", "allow", "require":
            tls.certificateVerification = root == nil ? .none : .noHostnameVerification
        case "verify-ca": tls.certificateVerification = .noHostnameVerification
        case "verify-full":
            guard !host.contains(":"), !host.allSatisfy({ $0.isNumber || $0 == "." }) else {
                throw DatabaseProblem(
                    .unusable,
                    "sslmode=verify-full checks the server's name, and the URL gives its address (\(host)): "
                        + "name it as its certificate does, or use sslmode=verify-ca")
            }
            tls.certificateVerification = .fullVerification
        default:
            throw DatabaseProblem(
                .unusable, "sslmode '\(mode)' is not one of disable, prefer, require, verify-ca, verify-full")
        }
        if let root {
            guard FileManager.default.isReadableFile(atPath: root),
                let certificates = try? NIOSSLCertificate.fromPEMFile(root), !certificates.isEmpty
            else {
                throw DatabaseProblem(.unusable, "sslrootcert \(root) is not a readable PEM file of certificates")
            }
            tls.trustRoots = .certificates(certificates)
        }
        return (tls, mode != "prefer" && mode != "allow")
    }

    /// Opens a connection of its own and closes it: what a start asks first, so that a
    /// database that will not do says why (`DatabaseProblem`) where the pool would only wait.
    func meet(logger: Logger) async throws {
        var patient = probe
        patient.options.connectTimeout = .seconds(5)
        let (contact, place, timeout) = (patient, place, Duration.seconds(10))
        do {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    let connection = try await PostgresConnection.connect(configuration: contact, id: 0, logger: logger)
                    try? await connection.close()
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return false
                }
                defer { group.cancelAll() }
                guard try await group.next() == true else {
                    throw DatabaseProblem(
                        .unreachable,
                        "the database at \(place.address) took the connection and answered nothing for "
                            + "\(DatabaseWatchdog.seconds(timeout))")
                }
            }
        } catch let problem as DatabaseProblem {
            throw problem
        } catch {
            throw DatabaseProblem.classify(error, at: place) ?? StoreUnavailable(description: "\(error)")
        }
    }

    /// How long operations on this database may wait, with its probe.
    func reachability(logger: Logger) -> Reachability {
        Reachability(probe: PostgresProbe(probe, place: place, logger: logger), logger: logger)
    }
}

/// `SELECT 1` on a connection of its own, outside the pool: opened by the first probe, kept,
/// and opened again after any failure, so that a probe costs one round trip, not a new backend.
final class PostgresProbe: ReachabilityProbe {
    private let configuration: PostgresConnection.Configuration
    private let place: DatabaseProblem.Place
    private let logger: Logger
    private let state = Mutex<(connection: Task<PostgresConnection, Error>?, closed: Bool)>((nil, false))

    init(_ configuration: PostgresConnection.Configuration, place: DatabaseProblem.Place, logger: Logger) {
        self.configuration = configuration
        self.place = place
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
    /// first. Throws what kept it from an answer, as a `DatabaseProblem` where it says one.
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
                guard again, !Task.isCancelled else { throw DatabaseProblem.classify(error, at: place) ?? error }
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
        // No right to make the hub's tables (a role that does not own its database).
        let fix = state == "42501" ? " (42501: make the hub's role the database's owner: ALTER DATABASE … OWNER TO …)" : ""
        self.init(
            description: "the database refused a statement: \(message)\(fix)",
            permanent: state.hasPrefix("22") || state.hasPrefix("23"))
    }
}
