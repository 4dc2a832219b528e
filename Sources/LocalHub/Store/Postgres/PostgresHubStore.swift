import Foundation
import Logging
import NotificationHubs
import PostgresNIO
import Synchronization

/// The hub's store on PostgreSQL (postgres-nio), for several hub nodes sharing one database.
/// Every commit is synchronous (`synchronous_commit` on). Deliveries the caller leaves
/// unnumbered (`seq` 0) are numbered here, under a transaction-scoped advisory lock: numbers
/// become visible in the order they were taken, so a reader that has seen a number has seen
/// every smaller one (`SharedHubStore`).
public final class PostgresHubStore: HubStore, Sendable {
    let client: PostgresClient
    let logger: Logger
    /// This process, as the owner of the notifications it claims.
    public let node: String
    private let runner: Mutex<Task<Void, Never>?>
    /// Whether the database answered lately: how long an operation may wait for it.
    let reachability: Reachability
    /// Whether a batch of installation upserts tries the check at the head first.
    let headMisses = HeadMisses()

    /// Connects to `url` (`postgres://user[:password]@host[:port]/database`) and migrates;
    /// `password`, when given, in place of any in the URL (which `ps` shows every user).
    public init(url: String, password: String? = nil, node: String = UUID().uuidString.lowercased(), logger: Logger)
        async throws
    {
        let location = try PostgresLocation(url, password: password)
        reachability = location.reachability(logger: logger)
        client = PostgresClient(configuration: location.configuration, backgroundLogger: logger)
        let client = client
        runner = Mutex(Task { await client.run() })
        self.node = node
        self.logger = logger
        do {
            try await reachability.withDeadline {
                try await Self.withStoreErrors { try await Self.migrate(client, logger: self.logger) }
            }
            try await settleHighWater()
        } catch {
            shutdown()
            throw error
        }
    }

    /// Closes the connections.
    public func shutdown() {
        runner.withLock { task in
            task?.cancel()
            task = nil
        }
        reachability.shutdown()
    }

    deinit { runner.withLock { $0?.cancel() } }

    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let (client, logger) = (client, logger)
        return try await reachability.withDeadline {
            try await Self.withStoreErrors { try await client.withTransaction(logger: self.logger) { try await body($0) } }
        }
    }

    func rows(_ query: PostgresQuery) async throws -> [PostgresRandomAccessRow] {
        let (client, logger) = (client, logger)
        return try await reachability.withDeadline {
            try await Self.withStoreErrors {
                try await client.query(query, logger: self.logger).collect().map { $0.makeRandomAccess() }
            }
        }
    }

    /// The rows of a write a client is answered for that no procedure of migration v9 makes,
    /// once committed: BEGIN, the statement, COMMIT. Run by itself, a statement is answered
    /// at its CommandComplete, which PostgreSQL sends before the commit that ends it, and an
    /// error of that commit came after writes were answered as written. (Batches call the
    /// procedures, which commit in the call: one round trip, not three.)
    func written(_ query: PostgresQuery) async throws -> [PostgresRandomAccessRow] {
        try await transaction { connection in
            try await connection.query(query, logger: self.logger).collect().map { $0.makeRandomAccess() }
        }
    }

    /// The rows of a statement prepared once per connection: planned once, not at every call
    /// (what a node runs at every commit or catch-up; planning the change-log page took
    /// 0.5 ms, against 0.03 ms to run it).
    func rows<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [PostgresRandomAccessRow]
    where Statement.Row == PostgresRandomAccessRow {
        let (client, logger) = (client, logger)
        return try await reachability.withDeadline {
            try await Self.withStoreErrors {
                try await client.execute(statement, logger: logger).reduce(into: []) { $0.append($1) }
            }
        }
    }

    static func binds(_ values: any PostgresDynamicTypeEncodable...) -> PostgresBindings {
        var binds = PostgresBindings(capacity: values.count)
        for value in values { binds.append(value) }
        return binds
    }

    /// Seconds a node's claim on a notification it dispatches holds without being renewed.
    public static let leaseSeconds: Double = 10
}
