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
    /// Whether a batch of installation upserts tries the check at the head first.
    let headMisses = HeadMisses()
    /// Whether the database answered lately: how long an operation may wait for it.
    let reachability: Reachability
    /// Where the database is: what `open()` meets first.
    let location: PostgresLocation
    /// Finished by `shutdown()`: what ends `run()`.
    private let closing: (signal: AsyncStream<Void>, close: AsyncStream<Void>.Continuation)
    /// Finished once the pool runs: what `open()` waits for, since a connection asked of a
    /// pool not yet running waits with a warning in the log.
    private let running: (signal: AsyncStream<Void>, mark: AsyncStream<Void>.Continuation)

    /// The store on `url` (`postgres://user[:password]@host[:port]/database`), connected to
    /// nothing yet: `run()` runs its connection pool, and `open()` then migrates. `password`,
    /// when given, in place of any in the URL (which `ps` shows every user). A caller outside
    /// a task group of its own uses `whileRunning`.
    public init(url: String, password: String? = nil, node: String = UUID().uuidString.lowercased(), logger: Logger)
        throws
    {
        let location = try PostgresLocation(url, password: password)
        self.location = location
        client = PostgresClient(configuration: location.configuration, backgroundLogger: logger)
        reachability = location.reachability(logger: logger)
        let made = AsyncStream.makeStream(of: Void.self)
        closing = (made.stream, made.continuation)
        let marked = AsyncStream.makeStream(of: Void.self)
        running = (marked.stream, marked.continuation)
        self.node = node
        self.logger = logger
    }

    /// Runs the connection pool until `shutdown()` or until cancelled: a child of the hub's
    /// task group (`LocalHubServer.run`), or a child of a command's (`whileRunning`). Every
    /// operation waits for it.
    public func run() async { await Self.runPool(pool, until: closing.signal) }

    /// The pool, the probes of its reachability, and what marks the pool running.
    var pool: Pool { Pool(client: client, reachability: reachability, running: running.mark) }

    struct Pool: Sendable {
        let client: PostgresClient
        let reachability: Reachability
        let running: AsyncStream<Void>.Continuation
    }

    /// `pool`'s connections and its probes, run until `closed` ends (`shutdown()`, or the
    /// store let go of) or the task is cancelled.
    static func runPool(_ pool: Pool, until closed: AsyncStream<Void>) async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                pool.running.finish()
                await pool.client.run()
            }
            group.addTask { await pool.reachability.run() }
            for await _ in closed {}
            group.cancelAll()
        }
    }

    /// What ends the pool's run when the store is let go of without `shutdown()`.
    var closed: AsyncStream<Void> { closing.signal }

    deinit { closing.close.finish() }

    /// Meets the database on a connection of its own (throwing a `DatabaseProblem` that says
    /// why it will not do), then migrates to this version's schema and settles the delivery
    /// numbers' high-water mark, once `run()` runs; a store that cannot be opened is shut down.
    public func open() async throws {
        for await _ in running.signal {}
        do {
            try await location.meet(logger: logger)
            try await reachability.withDeadline {
                try await Self.withStoreErrors { try await Self.migrate(self.client, logger: self.logger) }
            }
            try await settleHighWater()
        } catch {
            shutdown()
            throw error
        }
    }

    /// `body`, with the pool run by a child task for as long as it runs (and `shutdown()` after,
    /// however it ends): for a caller without a task group of its own to run `run()` in.
    public func whileRunning<T>(_ body: () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await self.run() }
            defer { shutdown() }
            return try await body()
        }
    }

    /// Closes the connections: `run()` returns.
    public func shutdown() {
        closing.close.finish()
        reachability.shutdown()
    }

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
