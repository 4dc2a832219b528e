import Foundation
import PostgresNIO

/// The delivery log in the compact form, as on SQLite: each device once (`device_ref`), a
/// payload once per notification, template and body of a dispatch (`payload`, with the first
/// and last number of its deliveries), and each delivery its number, its device's reference
/// and its payload's (`delivery`). Rows of the earlier form (a whole payload in each) stay
/// readable in `delivery_v1` until a node copies them (`copyEarlierDeliveries`), oldest first,
/// in batches, while it serves; every read of the log reads both. Deliveries are inserted in
/// number order: the primary key's pages then fill before they split (numbers out of order
/// within a batch split them half full, a third more index per delivery).
extension PostgresHubStore {
    static let compactLog = Migration(
        name: "v15: a compact delivery log",
        statements: [
            "ALTER TABLE delivery RENAME TO delivery_v1",
            "ALTER INDEX delivery_pkey RENAME TO delivery_v1_pkey",
            "ALTER INDEX delivery_device RENAME TO delivery_v1_device",
            "ALTER INDEX delivery_notification RENAME TO delivery_v1_notification",
            "CREATE TABLE device_ref (id bigserial PRIMARY KEY, hub text NOT NULL, device text NOT NULL, UNIQUE (hub, device))",
            """
            CREATE TABLE payload (
                id bigserial PRIMARY KEY, hub text NOT NULL, notification_id text NOT NULL, template text NOT NULL,
                tags text, delivered double precision NOT NULL, body text NOT NULL, first_seq bigint NOT NULL,
                last_seq bigint NOT NULL)
            """,
            "CREATE INDEX payload_notification ON payload (notification_id)",
            "CREATE INDEX payload_last ON payload (last_seq)",
            "CREATE TABLE delivery (seq bigint PRIMARY KEY, device bigint NOT NULL, payload bigint NOT NULL)",
            "CREATE INDEX delivery_device ON delivery (device, seq)",
            PostgresRoutine.recordDispatches.definition,
        ])

    /// The columns of a delivery read from the compact form (`logJoin`), named as the rows of
    /// the earlier form are (`earlierColumns`), so that one decoder reads both.
    static let logColumns = "d.seq, r.hub, r.device, p.notification_id, p.template, p.body AS payload, p.delivered, p.tags"
    static let logJoin = "delivery d JOIN device_ref r ON r.id = d.device JOIN payload p ON p.id = d.payload"
    static let earlierColumns = "o.seq, o.hub, o.device, o.notification_id, o.template, o.payload, o.delivered, o.tags"

    /// Moves up to `limit` of the oldest rows of the earlier form into the compact one, in one
    /// transaction (their numbers, devices, payloads and times kept as they were); answers how
    /// many moved: 0 once none is left.
    public func copyEarlierDeliveries(limit: Int) async throws -> Int {
        try await transaction { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Lock.logRemoval.rawValue))", logger: self.logger)
            try await connection.query(
                """
                INSERT INTO device_ref (hub, device)
                SELECT DISTINCT o.hub, o.device FROM (SELECT hub, device FROM delivery_v1 ORDER BY seq LIMIT \(limit)) o
                WHERE NOT EXISTS (SELECT 1 FROM device_ref r WHERE r.hub = o.hub AND r.device = o.device)
                ON CONFLICT (hub, device) DO NOTHING
                """, logger: self.logger)
            let moved = try await connection.query(
                """
                WITH moved AS (
                    DELETE FROM delivery_v1 WHERE seq IN (SELECT seq FROM delivery_v1 ORDER BY seq LIMIT \(limit))
                    RETURNING *),
                kept AS MATERIALIZED (
                    SELECT m.*, r.id AS dev,
                        dense_rank() OVER (ORDER BY m.hub, m.notification_id, m.template, m.tags, m.delivered, m.payload) AS k
                    FROM moved m JOIN device_ref r ON r.hub = m.hub AND r.device = m.device),
                shared AS MATERIALIZED (
                    SELECT k, nextval('payload_id_seq') AS id, MIN(seq) AS first, MAX(seq) AS last, hub, notification_id,
                        template, tags, delivered, payload
                    FROM kept GROUP BY k, hub, notification_id, template, tags, delivered, payload),
                bodies AS (
                    INSERT INTO payload (id, hub, notification_id, template, tags, delivered, body, first_seq, last_seq)
                    SELECT id, hub, notification_id, template, tags, delivered, payload, first, last FROM shared),
                added AS (
                    INSERT INTO delivery (seq, device, payload)
                    SELECT kept.seq, kept.dev, shared.id FROM kept JOIN shared ON shared.k = kept.k
                    ORDER BY kept.seq
                    ON CONFLICT (seq) DO NOTHING RETURNING seq)
                SELECT (SELECT COUNT(*) FROM moved), (SELECT COUNT(*) FROM kept)
                """, logger: self.logger
            ).collect().first?.decode((Int64, Int64).self)
            guard let (removed, copied) = moved else { return 0 }
            if copied != removed {
                // Every row's device was given a reference above: a row left out would be lost.
                throw StoreFailure(description: "copying the delivery log found \(removed) rows and copied \(copied)")
            }
            return Int(removed)
        }
    }
}
