import Foundation
import Logging
import PostgresNIO

/// The PostgreSQL schema, as named migrations that are only ever appended. Each runs in its
/// own transaction under an advisory lock, so nodes starting together migrate once.
extension PostgresHubStore {
    /// A migration: its name, kept in `migration` once applied, and its statements.
    struct Migration {
        let name: String
        let statements: [String]
    }

    static let migrations: [Migration] = [
        Migration(
            name: "v1: installations, registrations, notifications, deliveries, changes",
            statements: [
                "CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)",
                """
                CREATE TABLE installation (
                    hub text NOT NULL, id text NOT NULL, json text NOT NULL, PRIMARY KEY (hub, id))
                """,
                """
                CREATE TABLE registration (
                    hub text NOT NULL, id text NOT NULL, xml text NOT NULL,
                    created double precision NOT NULL, updated double precision NOT NULL, PRIMARY KEY (hub, id))
                """,
                // `owner` and `lease_until`: the node dispatching it, and until when its claim holds.
                """
                CREATE TABLE notification (
                    seq bigserial PRIMARY KEY, hub text NOT NULL, id text NOT NULL UNIQUE, format text NOT NULL,
                    tags text, body text NOT NULL, headers text NOT NULL, direct_handle text, test boolean NOT NULL,
                    enqueued double precision NOT NULL, state text NOT NULL, started double precision,
                    ended double precision, outcome text NOT NULL, fire_at double precision, direct_handles text,
                    report text, owner text, lease_until double precision NOT NULL DEFAULT 0)
                """,
                "CREATE INDEX notification_unfinished ON notification (seq) WHERE state IN ('Enqueued', 'Processing')",
                "CREATE INDEX notification_scheduled ON notification (fire_at) WHERE state = 'Scheduled'",
                """
                CREATE TABLE delivery (
                    seq bigint PRIMARY KEY, hub text NOT NULL, device text NOT NULL, notification_id text NOT NULL,
                    template text NOT NULL, payload text NOT NULL, delivered double precision NOT NULL, tags text)
                """,
                "CREATE INDEX delivery_device ON delivery (hub, device, seq)",
                "CREATE INDEX delivery_notification ON delivery (notification_id)",
                """
                CREATE TABLE quarantine (
                    seq bigserial PRIMARY KEY, kind text NOT NULL, hub bytea NOT NULL, id bytea NOT NULL, body bytea,
                    reason text NOT NULL, at double precision NOT NULL)
                """,
                """
                CREATE TABLE sandbox_device (
                    hub text NOT NULL, device text NOT NULL, claimed double precision NOT NULL, PRIMARY KEY (hub, device))
                """,
                // What changed, in commit order: other nodes read the rows named here.
                "CREATE TABLE change (seq bigint PRIMARY KEY, kind text NOT NULL, hub text NOT NULL, id text NOT NULL)",
                "INSERT INTO meta (key, value) VALUES ('seq_reserved', '0')",
            ]),
        // A claim's `claimed` is when it was last claimed or renewed: claims nothing used for
        // a week are let go, oldest first.
        Migration(name: "v2: claims by age", statements: ["CREATE INDEX sandbox_device_claimed ON sandbox_device (claimed)"]),
        // Retention: deliveries removed by age (their numbers grow with time), what each
        // device lost kept as its gap, notifications removed once ended long enough.
        Migration(
            name: "v3: retention",
            statements: [
                """
                CREATE TABLE device_gap (
                    hub text NOT NULL, device text NOT NULL, gap_from bigint NOT NULL, gap_through bigint NOT NULL,
                    gap_count bigint NOT NULL, PRIMARY KEY (hub, device))
                """,
                "CREATE INDEX delivery_delivered ON delivery (delivered)",
                "CREATE INDEX notification_ended ON notification (ended) WHERE ended IS NOT NULL",
            ]),
        // The change log pruned behind its readers: how far each node has read it
        // (`position`, noted at `seen`), and the point it was pruned through, which a node
        // that had read less must reload its tables to pass.
        Migration(
            name: "v4: change log pruned behind its readers",
            statements: [
                "CREATE TABLE change_reader (node text PRIMARY KEY, position bigint NOT NULL, seen double precision NOT NULL)",
                "INSERT INTO meta (key, value) VALUES ('change_pruned', '0') ON CONFLICT (key) DO NOTHING",
            ]),
        // Keys that rotate: the generation of the keys each node serves, which
        // `breaking-news hub keys` waits on (the keys themselves stay in `meta`).
        Migration(
            name: "v5: keys served by each node",
            statements: ["ALTER TABLE change_reader ADD COLUMN keys_generation bigint NOT NULL DEFAULT 0"]),
        // The change log numbered from a counter row, whose lock orders commits, in place of an
        // advisory lock and the highest number: a batch of installations is then one
        // statement. Every node must run this version: one of an earlier version numbers
        // from the highest number and would take numbers this counter gives.
        Migration(
            name: "v6: change log numbered from a counter",
            statements: [
                "INSERT INTO meta (key, value) SELECT 'change_seq', COALESCE(MAX(seq), 0)::text FROM change ON CONFLICT (key) DO NOTHING"
            ]),
    ]

    /// Applies the migrations not applied yet, in order, each in one transaction.
    static func migrate(_ client: PostgresClient, logger: Logger) async throws {
        try await client.withConnection { connection in
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
                    let epoch = UUID().uuidString.lowercased()
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
    }
}
