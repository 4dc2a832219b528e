import Foundation
import Logging
import NotificationHubs
import PostgresNIO

/// What a backup and a move between stores need of a PostgreSQL database besides the
/// `HubStore` calls: everything read from one snapshot, and a new hub written into it.
extension PostgresHubStore {
    /// What a snapshot of the database held besides its rows.
    struct ExportedMeta: Sendable {
        var epoch: String
        /// The hubs' keys as the database keeps them (the key file's text), if any.
        var keys: String?
        var highestSequence: Int64
        /// Rows that failed the checks a node makes of what it reads, left out.
        var skipped: Int
    }

    /// Copies every installation, registration, claim, notification, delivery and gap into
    /// `target` from one repeatable-read snapshot, read only, so that a hub serving meanwhile
    /// changes nothing of what is copied. Each row is checked as a node checks what it reads.
    func export(into target: SQLiteHubStore) async throws -> ExportedMeta {
        let logger = logger
        return try await Self.withStoreErrors {
            try await client.withConnection { connection in
                try await connection.query("START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
                do {
                    let meta = try await self.export(on: connection, into: target)
                    try await connection.query("COMMIT", logger: logger)
                    return meta
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
        }
    }

    private func export(on connection: PostgresConnection, into target: SQLiteHubStore) async throws -> ExportedMeta {
        var meta = ExportedMeta(epoch: "", keys: nil, highestSequence: 0, skipped: 0)
        for try await (epoch, keys) in try await connection.query(
            "SELECT (SELECT epoch FROM delivery_counter), (SELECT value FROM meta WHERE key = 'keys')", logger: logger
        ).decode((String?, String?).self) {
            (meta.epoch, meta.keys) = (epoch ?? "", keys)
        }
        for try await high in try await connection.query(PostgresQuery(unsafeSQL: Self.highWater), logger: logger).decode(
            Int64.self)
        {
            meta.highestSequence = high
        }
        meta.skipped += try await exportRecords(on: connection, into: target)
        meta.skipped += try await exportNotifications(on: connection, into: target)
        meta.skipped += try await exportDeliveries(on: connection, into: target)
        return meta
    }

    /// Copies the installations, registrations and claims; answers how many rows it left out.
    private func exportRecords(on connection: PostgresConnection, into target: SQLiteHubStore) async throws -> Int {
        var (batch, skipped) = ([HubMutation](), 0)
        func flush(_ force: Bool = false) async throws {
            guard force || batch.count >= 500 else { return }
            try await target.apply(batch)
            batch.removeAll(keepingCapacity: true)
        }
        for try await (hub, id, json) in try await connection.query("SELECT hub, id, json FROM installation", logger: logger)
            .decode((String, String, String).self)
        {
            if let installation = try? Installation.stored(json: json, id: id.utf8) {
                batch.append(.upsertInstallation(hub: hub, installation))
                try await flush()
            } else {
                skipped += 1
            }
        }
        for try await (hub, id, xml, created, updated) in try await connection.query(
            "SELECT hub, id, xml, created, updated FROM registration", logger: logger
        ).decode((String, String, String, Double, Double).self) {
            if let stored = try? StoredRegistration.stored(hub: hub, id: id.utf8, xml: xml, created: created, updated: updated) {
                batch.append(.upsertRegistration(stored))
                try await flush()
            } else {
                skipped += 1
            }
        }
        for try await (hub, device, claimed, digest) in try await connection.query(
            "SELECT hub, device, claimed, secret_hash FROM sandbox_device", logger: logger
        ).decode((String, String, Double, String?).self) {
            guard DeviceToken.isValid(device), StoredRange.time.contains(claimed) else {
                skipped += 1
                continue
            }
            batch.append(
                .claimDevice(
                    hub: hub, device: device.lowercased(), at: Date(timeIntervalSince1970: claimed),
                    secretDigest: ClaimDigest.stored(digest)))
            try await flush()
        }
        try await flush(true)
        return skipped
    }

    /// Copies the notifications with their reports; answers how many rows it left out.
    private func exportNotifications(on connection: PostgresConnection, into target: SQLiteHubStore) async throws -> Int {
        var (batch, reports, skipped) = ([HubMutation](), [DispatchRecord](), 0)
        func flush() async throws {
            try await target.apply(batch)
            batch.removeAll(keepingCapacity: true)
            _ = try await target.record(reports)
            reports.removeAll(keepingCapacity: true)
        }
        for try await row in try await connection.query("SELECT * FROM notification ORDER BY seq", logger: logger) {
            guard let notification = checkedNotification(row.makeRandomAccess()) else {
                skipped += 1
                continue
            }
            batch.append(.insertNotification(notification))
            if !notification.report.isEmpty { reports.append(DispatchRecord(notification: notification, deliveries: [])) }
            if batch.count >= 500 { try await flush() }
        }
        try await flush()
        return skipped
    }

    /// Copies the deliveries and the gaps; answers how many rows it left out.
    private func exportDeliveries(on connection: PostgresConnection, into target: SQLiteHubStore) async throws -> Int {
        var (deliveries, skipped) = ([Delivery](), 0)
        for try await row in try await connection.query(
            """
            SELECT * FROM (SELECT \(unescaped: Self.logColumns) FROM \(unescaped: Self.logJoin)
                UNION ALL SELECT \(unescaped: Self.earlierColumns) FROM delivery_v1 o) u
            ORDER BY seq
            """, logger: logger)
        {
            guard let delivery = delivery(from: row.makeRandomAccess()) else {
                skipped += 1
                continue
            }
            deliveries.append(delivery)
            if deliveries.count >= 2000 {
                try await target.importDeliveries(deliveries)
                deliveries.removeAll(keepingCapacity: true)
            }
        }
        try await target.importDeliveries(deliveries)
        var gaps: [(hub: String, device: String, gap: DeliveryGap)] = []
        for try await (hub, device, from, through, count) in try await connection.query(
            "SELECT hub, device, gap_from, gap_through, gap_count FROM device_gap", logger: logger
        ).decode((String, String, Int64, Int64, Int64).self) {
            gaps.append((hub, device, DeliveryGap(from: from, through: through, count: Int(count))))
        }
        try await target.importGaps(gaps)
        return skipped
    }

    /// Whether the database holds a hub already: any installation, registration, claim,
    /// notification or delivery, or keys (which the first node to start makes).
    public func holdsHub() async throws -> Bool {
        try await rows(
            """
            SELECT EXISTS (SELECT 1 FROM installation) OR EXISTS (SELECT 1 FROM registration)
                OR EXISTS (SELECT 1 FROM sandbox_device) OR EXISTS (SELECT 1 FROM notification)
                OR EXISTS (SELECT 1 FROM delivery) OR EXISTS (SELECT 1 FROM delivery_v1) OR EXISTS (SELECT 1 FROM meta WHERE key = 'keys') AS held
            """
        ).first?["held"].decode(Bool.self) ?? false
    }

    /// Removes every hub the database holds, keys and change log included, and starts a new
    /// delivery-log epoch: what a hub moved in with `--force` replaces. Nodes must be stopped.
    func erase() async throws {
        let epoch = HubEpoch.make()
        try await transaction { connection in
            try await connection.query(
                """
                TRUNCATE installation, registration, sandbox_device, notification, delivery, delivery_v1, payload,
                    device_ref, device_gap, change, change_reader, quarantine
                """, logger: self.logger)
            try await connection.query("DELETE FROM meta WHERE key = 'keys'", logger: self.logger)
            try await connection.query(
                """
                INSERT INTO change_counter (change_seq, change_pruned) VALUES (0, 0)
                ON CONFLICT (one) DO UPDATE SET change_seq = 0, change_pruned = 0
                """, logger: self.logger)
            try await connection.query(
                """
                INSERT INTO delivery_counter (epoch, seq_reserved, delivery_high) VALUES (\(epoch), 0, 0)
                ON CONFLICT (one) DO UPDATE SET epoch = excluded.epoch, seq_reserved = 0, delivery_high = 0
                """, logger: self.logger)
        }
    }

    /// Keeps `text`, a key file's text, as the keys every node serves.
    func importKeys(_ text: String) async throws {
        try await transaction { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Lock.keys.rawValue))", logger: self.logger)
            try await connection.query(
                "INSERT INTO meta (key, value) VALUES ('keys', \(text)) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                logger: self.logger)
        }
    }

    /// Writes deliveries with the numbers they carry (one whose number is taken is skipped).
    func importDeliveries(_ deliveries: [Delivery]) async throws {
        guard !deliveries.isEmpty else { return }
        _ = try await record(deliveries, states: [])
    }

    /// Keeps what retention took from each device.
    func importGaps(_ gaps: [(hub: String, device: String, gap: DeliveryGap)]) async throws {
        guard !gaps.isEmpty else { return }
        try await transaction { connection in
            for entry in gaps {
                try await connection.query(
                    """
                    INSERT INTO device_gap (hub, device, gap_from, gap_through, gap_count)
                    VALUES (\(entry.hub), \(entry.device), \(entry.gap.from), \(entry.gap.through), \(Int64(entry.gap.count)))
                    ON CONFLICT (hub, device) DO UPDATE SET gap_from = excluded.gap_from, gap_through = excluded.gap_through,
                        gap_count = excluded.gap_count
                    """, logger: self.logger)
            }
        }
    }
}
