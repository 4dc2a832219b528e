import Foundation
import Logging
import PostgresNIO

/// Running the migrations (`migrations`), and the advisory locks the store takes.
extension PostgresHubStore {
    /// Applies the migrations not applied yet, in order, each in one transaction.
    static func migrate(_ client: PostgresClient, logger: Logger) async throws {
        // Under the lock too: two sessions creating the table at once both pass IF NOT EXISTS,
        // and the second fails on the catalog's unique index (nodes started together on a new
        // database).
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Lock.migration.rawValue))", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS migration (name text PRIMARY KEY, applied double precision NOT NULL)",
                logger: logger)
        }
        for migration in migrations {
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(Lock.migration.rawValue))", logger: logger)
                let done = try await connection.query(
                    "SELECT 1 FROM migration WHERE name = \(migration.name)", logger: logger
                ).collect()
                guard done.isEmpty else { return }
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                if migration.name.hasPrefix("v1:") {
                    let epoch = HubEpoch.make()
                    try await connection.query("INSERT INTO meta (key, value) VALUES ('epoch', \(epoch))", logger: logger)
                }
                try await connection.query(
                    "INSERT INTO migration (name, applied) VALUES (\(migration.name), \(Date().timeIntervalSince1970))",
                    logger: logger)
            }
        }
    }

    /// Transaction-scoped advisory locks: whoever holds one commits before the next takes it.
    enum Lock: Int64 {
        case migration = 0x4E48_0001
        /// Numbers deliveries: taken in the order they become visible.
        case deliveries = 0x4E48_0002
        case keys = 0x4E48_0004
        /// Prunes the change log: one node at a time.
        case changePruning = 0x4E48_0005
        /// Removes rows of the delivery log: retention and the copy of the earlier form
        /// (`copyEarlierDeliveries`), one at a time, so that neither counts a row the other moves.
        case logRemoval = 0x4E48_0006
    }
}
