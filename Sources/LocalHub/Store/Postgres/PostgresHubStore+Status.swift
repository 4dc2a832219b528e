import Foundation
import PostgresNIO

/// What `hub status` shows of a cluster: the nodes that noted how far they read the change
/// log, how far behind its head each is, and the schema the database is at.
public struct ClusterStatus: Sendable, Equatable {
    /// One node's last note in `change_reader`.
    public struct Node: Sendable, Equatable {
        public let name: String
        /// Changes it has still to read, at its last note.
        public let behind: Int64
        /// When it last noted (every 15 s while it runs).
        public let seen: Date
        public let keysGeneration: Int64
    }

    public let nodes: [Node]
    /// The last change numbered.
    public let head: Int64
    /// The migrations applied, and the last of them.
    public let migrations: Int
    public let lastMigration: String?
}

extension PostgresHubStore {
    /// Every node with a note in `change_reader` (retention removes those not heard from for
    /// 5 minutes), the change log's head and the schema's migrations.
    public func clusterStatus() async throws -> ClusterStatus {
        let head = try await rows("SELECT change_seq FROM change_counter").first?["change_seq"].decode(Int64.self) ?? 0
        let nodes = try await rows("SELECT node, position, seen, keys_generation FROM change_reader ORDER BY node").map {
            row in
            ClusterStatus.Node(
                name: try row["node"].decode(String.self), behind: max(0, head - (try row["position"].decode(Int64.self))),
                seen: Date(timeIntervalSince1970: try row["seen"].decode(Double.self)),
                keysGeneration: try row["keys_generation"].decode(Int64.self))
        }
        let migrations = try await rows("SELECT name FROM migration ORDER BY applied, name").map {
            try $0["name"].decode(String.self)
        }
        return ClusterStatus(nodes: nodes, head: head, migrations: migrations.count, lastMigration: migrations.last)
    }
}
