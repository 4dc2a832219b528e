import Foundation
import Logging
import PostgresNIO

/// Keeping the change log short: each node notes how far it has read (`change_reader`), and
/// the log is pruned up to the slowest node seen lately. The point pruned through is kept in
/// `change_counter` (`change_pruned`); `changes(after:limit:)` refuses to read from behind it.
extension PostgresHubStore {
    public func noteChangePosition(_ position: Int64, now: Date) async throws {
        _ = try await rows(
            """
            INSERT INTO change_reader (node, position, seen) VALUES (\(node), \(position), \(now.timeIntervalSince1970))
            ON CONFLICT (node) DO UPDATE SET position = excluded.position, seen = excluded.seen
            """)
    }

    /// Removing a change a later one of the same row repeats keeps what every reader ends up
    /// with: a reader applies a row as it is when read, never as the change left it, so the
    /// later change alone brings any reader the row as the earlier one would have. The last
    /// change stays, so the next is numbered after it (numbers are `MAX(seq) + n`), and
    /// every reader behind the point pruned through still finds a row to learn it from.
    public func pruneChanges(now: Date, liveWindow: TimeInterval) async throws -> Int {
        try await transaction { connection in
            // Nodes prune at once in their own time: one does, the others find it busy.
            let free = try await connection.query(
                "SELECT pg_try_advisory_xact_lock(\(Lock.changePruning.rawValue))", logger: self.logger
            ).collect().first?.decode(Bool.self)
            guard free == true else { return 0 }
            try await connection.query(
                "DELETE FROM change_reader WHERE seen < \(now.timeIntervalSince1970 - liveWindow)", logger: self.logger)
            let bounds = try await connection.query(
                """
                SELECT (SELECT MIN(position) FROM change_reader), (SELECT MAX(seq) FROM change),
                    (SELECT change_pruned FROM change_counter)
                """, logger: self.logger
            ).collect().first?.decode((Int64?, Int64?, Int64?).self)
            var removed = 0
            if case let (slowest?, head?, pruned)? = bounds, min(slowest, head - 1) > (pruned ?? 0) {
                let through = min(slowest, head - 1)
                removed += try await Self.count(
                    "WITH gone AS (DELETE FROM change WHERE seq <= \(through) RETURNING 1) SELECT COUNT(*) FROM gone",
                    on: connection, logger: self.logger)
                try await connection.query(
                    "UPDATE change_counter SET change_pruned = \(through)", logger: self.logger)
            }
            removed += try await Self.count(
                """
                WITH gone AS (
                    DELETE FROM change WHERE seq IN (
                        SELECT seq FROM (
                            SELECT seq, row_number() OVER (PARTITION BY kind, hub, id ORDER BY seq DESC) AS newer FROM change
                        ) AS c WHERE newer > 1)
                    RETURNING 1)
                SELECT COUNT(*) FROM gone
                """, on: connection, logger: self.logger)
            return removed
        }
    }

    private static func count(_ query: PostgresQuery, on connection: PostgresConnection, logger: Logger) async throws -> Int {
        Int(try await connection.query(query, logger: logger).collect().first?.decode(Int64.self) ?? 0)
    }
}
