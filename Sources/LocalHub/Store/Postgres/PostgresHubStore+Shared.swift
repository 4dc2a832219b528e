import Foundation
import LocalHubSupport
import Logging
import NotificationHubs
import PostgresNIO

/// What several nodes on one database need: the change log, the delivery feed, claims on
/// notifications, wake-ups and the shared keys.
extension PostgresHubStore: SharedHubStore {
    public func changeHead() async throws -> Int64 {
        try await rows("SELECT COALESCE(MAX(seq), 0) AS head FROM change").first?["head"].decode(Int64.self) ?? 0
    }

    /// The point the log was pruned through is read in the same statement as the page, so
    /// both come from one snapshot: a page read after a prune is never taken for complete.
    /// (A prune keeps the last change, so a reader behind the point always gets a row.)
    ///
    /// Whatever the planner knows of the tables, the page is read through the change log's
    /// index and each row looked up by its key. Tables it has no statistics for yet (a
    /// cluster's first minutes, after a load) were otherwise read whole for every page, even
    /// an empty one, at a cost growing with the tables. The upper bound
    /// (the head, which the index gives at once) makes the page a range the planner takes
    /// for small; `LIMIT 1` keeps a lookup from being turned back into a join.
    public func changes(after seq: Int64, limit: Int, applied: [ChangedRecord: Int64]) async throws -> [StoredChange] {
        let page = try await rows(ChangePage(after: seq, limit: Int64(limit)))
        if let pruned = try page.first?["pruned"].decode(Int64?.self), pruned > seq {
            throw ChangeLogPruned(position: seq, prunedThrough: pruned)
        }
        var changes: [StoredChange] = []
        for row in page {
            let (seq, kind, hub, id) = (
                try row["seq"].decode(Int64.self), try row["kind"].decode(String.self), try row["hub"].decode(String.self),
                try row["id"].decode(String.self)
            )
            if let known = ChangeKind(rawValue: kind).map({ ChangedRecord(kind: $0, hub: hub, id: id) }),
                let at = applied[known], at >= seq
            {
                changes.append(StoredChange(seq: seq, row: .applied(known)))
                continue
            }
            switch ChangeKind(rawValue: kind) {
            case .installation:
                var installation: Installation?
                var quarantined = false
                if let json = try row["json"].decode(String?.self) {
                    do {
                        installation = try Installation.stored(json: json, id: id.utf8)
                    } catch {
                        // Checked as a request is; a row that fails reads as deleted, and goes aside.
                        quarantined = try await quarantine("installation", hub: hub, id: id, body: json, reason: "\(error)")
                    }
                }
                changes.append(
                    StoredChange(seq: seq, row: .installation(hub: hub, id: id, installation), quarantined: quarantined))
            case .registration:
                var stored: StoredRegistration?
                var quarantined = false
                if let xml = try row["xml"].decode(String?.self) {
                    do {
                        stored = try StoredRegistration.stored(
                            hub: hub, id: id.utf8, xml: xml, created: try row["created"].decode(Double.self),
                            updated: try row["updated"].decode(Double.self))
                    } catch {
                        quarantined = try await quarantine("registration", hub: hub, id: id, body: xml, reason: "\(error)")
                    }
                }
                changes.append(
                    StoredChange(seq: seq, row: .registration(hub: hub, id: id, stored), quarantined: quarantined))
            case .builtInPushDevice, nil:
                // A token that is not one reads as a claim let go.
                let claimed = try row["claimed"].decode(Bool.self) && DeviceToken.isValid(id)
                let digest = ClaimDigest.stored(try row["secret_hash"].decode(String?.self))
                changes.append(
                    StoredChange(
                        seq: seq, row: .claim(hub: hub, device: id.lowercased(), claimed: claimed, secretDigest: digest)))
            }
        }
        return changes
    }

    /// Moves a row that failed its checks into the quarantine, if it still holds `body` (a
    /// write since replaced it: nothing to do), and logs it once. True when this call moved it.
    private func quarantine(_ table: String, hub: String, id: String, body: String, reason: String) async throws -> Bool {
        let column = table == "installation" ? "json" : "xml"
        let moved = try await rows(
            PostgresQuery(
                unsafeSQL: """
                    WITH moved AS (
                        DELETE FROM \(table) WHERE hub = $1 AND id = $2 AND \(column) = $3 RETURNING hub, id, \(column))
                    INSERT INTO quarantine (kind, hub, id, body, reason, at)
                    SELECT $4, convert_to(hub, 'UTF8'), convert_to(id, 'UTF8'), convert_to(\(column), 'UTF8'), $5, $6
                    FROM moved RETURNING seq
                    """,
                binds: Self.binds(hub, id, body, table, reason, Date().timeIntervalSince1970)))
        guard !moved.isEmpty else { return false }
        let record = QuarantinedRecord(kind: table, storedHub: hub.utf8, storedId: id.utf8, reason: reason)
        let why = reason.hasSuffix(".") ? String(reason.dropLast()) : reason
        logger.error(
            "quarantined the \(table) '\(record.id)' of hub '\(record.hub)' read from the database: \(why); it is kept in the quarantine table"
        )
        return true
    }

    public func deliveryFeed(after seq: Int64, limit: Int) async throws -> DeliveryFeedPage {
        // Bounded above by the head, as the change log's page is: read through the index
        // whatever the planner knows.
        let read = try await rows(
            """
            SELECT * FROM (
                (SELECT \(unescaped: Self.logColumns) FROM \(unescaped: Self.logJoin)
                WHERE d.seq > \(seq) AND d.seq <= (SELECT MAX(seq) FROM delivery) ORDER BY d.seq LIMIT \(limit))
                UNION ALL
                (SELECT \(unescaped: Self.earlierColumns) FROM delivery_v1 o
                WHERE o.seq > \(seq) AND o.seq <= (SELECT MAX(seq) FROM delivery_v1) ORDER BY o.seq LIMIT \(limit))) u
            ORDER BY seq LIMIT \(limit)
            """)
        return DeliveryFeedPage(
            deliveries: read.compactMap(delivery(from:)), through: try read.last.map { try $0["seq"].decode(Int64.self) },
            rowsRead: read.count)
    }

    public func claimNotifications(now: Date, limit: Int) async throws -> [StoredNotification] {
        let (now, until) = (now.timeIntervalSince1970, now.timeIntervalSince1970 + Self.leaseSeconds)
        let claimed = try await transactionByIndex { connection in
            try await connection.query(self.renewal(until: until, takingBack: false), logger: self.logger)
            // Each kind is looked for apart, through its own partial index: one condition with
            // OR was read in the order of the primary key, every row of the table at every
            // claim. A row one kind locks and the limit leaves out is
            // taken at a later claim.
            return try await connection.query(
                """
                WITH lapsed AS (
                    SELECT seq FROM notification
                    WHERE state IN ('Enqueued', 'Processing') AND lease_until < \(now)
                    ORDER BY seq LIMIT \(limit) FOR UPDATE SKIP LOCKED),
                due AS (
                    SELECT seq FROM notification WHERE state = 'Scheduled' AND fire_at <= \(now)
                    ORDER BY fire_at LIMIT \(limit) FOR UPDATE SKIP LOCKED),
                taken AS (SELECT seq FROM lapsed UNION ALL SELECT seq FROM due ORDER BY seq LIMIT \(limit))
                UPDATE notification SET owner = \(self.node), lease_until = \(until),
                    starts = starts + CASE WHEN state = 'Scheduled' THEN 0 ELSE 1 END,
                    state = CASE WHEN state = 'Scheduled' THEN 'Enqueued' ELSE state END
                WHERE seq IN (SELECT seq FROM taken)
                RETURNING *
                """, logger: self.logger
            ).collect().map { $0.makeRandomAccess() }
        }
        return try await dispatchable(claimed).sorted { $0.enqueued < $1.enqueued }
    }

    public func takeBackClaims(now: Date) async throws -> [StoredNotification] {
        let taken = try await transactionByIndex { connection in
            try await connection.query(
                self.renewal(until: now.timeIntervalSince1970 + Self.leaseSeconds, takingBack: true), logger: self.logger
            ).collect().map { $0.makeRandomAccess() }
        }
        return try await dispatchable(taken).sorted { $0.enqueued < $1.enqueued }
    }

    /// This node's unfinished sends, given a lease until `until` (taken back at a start, each
    /// counted as begun once more: `StoredNotification.dispatchStarts`). They are found first,
    /// through the partial index of unfinished sends, then updated by their keys: written as
    /// a join, the renewal read the whole table through its primary key when the statistics
    /// dated from a burst of this node's sends, or while many were in flight.
    ///
    /// Renewing, rows another transaction holds are skipped (a dispatch of this node records
    /// them; waiting in another order than it would deadlock). Taking back, at start, before
    /// this node dispatches anything, they are waited for and returned, unless the other
    /// transaction (another node's claim) took them: skipped, a row that claim locked but left
    /// to a later one would keep this node as its owner, renewed each second and dispatched by
    /// no node.
    private func renewal(until: Double, takingBack: Bool) -> PostgresQuery {
        """
        UPDATE notification SET lease_until = \(until)\(unescaped: takingBack ? ", starts = starts + 1" : "")
        WHERE seq = ANY (ARRAY(
            SELECT seq FROM notification WHERE owner = \(node) AND state IN ('Enqueued', 'Processing')
            FOR UPDATE \(unescaped: takingBack ? "" : "SKIP LOCKED")))
        \(unescaped: takingBack ? "RETURNING *" : "")
        """
    }

    /// `body` in a transaction that reads nothing sequentially, and compiles nothing (the
    /// settings of `PostgresRoutine.byIndexOnly`, for the transaction). For statements that look for
    /// the few unfinished or scheduled sends among the many finished ones the table keeps for
    /// their retention: with statistics made while most sends were unfinished or scheduled
    /// (a cluster's first minutes, a burst), the planner took the table for mostly such rows
    /// and read it whole, where the partial indexes hold only them.
    private func transactionByIndex<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T)
        async throws -> T
    {
        try await transaction { connection in
            try await connection.query(
                "SELECT set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true)", logger: self.logger)
            return try await body(connection)
        }
    }

    public func cancelScheduled(hub: String, id: String, at: Date) async throws -> Bool {
        try await !written(
            """
            UPDATE notification SET state = \(NotificationDetails.State.cancelled.rawValue), ended = \(at.timeIntervalSince1970)
            WHERE hub = \(hub) AND id = \(id) AND state = 'Scheduled' RETURNING seq
            """
        ).isEmpty
    }

    public func scheduledCount(hub: String) async throws -> Int {
        Int(
            try await transactionByIndex { connection in
                try await connection.query(
                    "SELECT COUNT(*) AS n FROM notification WHERE hub = \(hub) AND state = 'Scheduled'", logger: self.logger
                ).collect().first?.decode(Int64.self)
            } ?? 0)
    }

    public func sharedKeys(adding proposed: LocalHubKeyFile.Contents) async throws -> LocalHubKeyFile.Contents {
        try await changeKeys { keys in
            var changed = false
            for (hub, rules) in proposed.hubs where keys.hubName(hub) == nil {
                keys.hubs[hub] = rules
                changed = true
            }
            var completed = HubKeys(contents: keys)
            if completed.completed(hubs: []) { changed = true }
            keys = completed.contents
            return changed
        }
    }

    /// Changes the keys kept in the database in one transaction, one change at a time
    /// (`edit` returns whether it changed anything; then they are written and the other
    /// nodes woken). Returns the keys as they are after it.
    public func changeKeys(_ edit: @escaping @Sendable (inout LocalHubKeyFile.Contents) throws -> Bool) async throws
        -> LocalHubKeyFile.Contents
    {
        try await transaction { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Lock.keys.rawValue))", logger: self.logger)
            let stored = try await connection.query("SELECT value FROM meta WHERE key = 'keys'", logger: self.logger).collect()
            var keys = LocalHubKeyFile.Contents()
            if let text = try stored.first?.decode(String.self) {
                guard let decoded = LocalHubKeyFile.decode(text.utf8) else {
                    throw StoreFailure(description: "the keys kept in the database are not a key file")
                }
                keys = decoded
            }
            if try edit(&keys) {
                try await connection.query(
                    """
                    INSERT INTO meta (key, value) VALUES ('keys', \(LocalHubKeyFile.encode(keys)))
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value
                    """, logger: self.logger)
            }
            return keys
        }
    }

    public func storedKeys() async throws -> LocalHubKeyFile.Contents? {
        guard let text = try await rows("SELECT value FROM meta WHERE key = 'keys'").first?["value"].decode(String.self) else {
            return nil
        }
        guard let keys = LocalHubKeyFile.decode(text.utf8) else {
            throw StoreFailure(description: "the keys kept in the database are not a key file")
        }
        return keys
    }

    public func noteKeysGeneration(_ generation: Int64, now: Date) async throws {
        // A node notes its position at start, before this: the row is there, and a new one's
        // position of 0 would only hold back pruning until the next note.
        _ = try await rows(
            """
            INSERT INTO change_reader (node, position, seen, keys_generation)
            VALUES (\(node), 0, \(now.timeIntervalSince1970), \(generation))
            ON CONFLICT (node) DO UPDATE SET keys_generation = excluded.keys_generation, seen = excluded.seen
            """)
    }

    /// The nodes heard from within `window` before `now` and the generation of the keys each
    /// serves: what `hub keys` waits on until every one serves its change.
    public func keysServed(heardWithin window: TimeInterval, now: Date) async throws -> [(node: String, generation: Int64)] {
        let since = now.timeIntervalSince1970 - window
        return try await rows("SELECT node, keys_generation FROM change_reader WHERE seen >= \(since) ORDER BY node").map {
            (try $0["node"].decode(String.self), try $0["keys_generation"].decode(Int64.self))
        }
    }

    /// Listens on one connection held for it, again after any loss (yielding `reconnected`).
    public func wakeups() -> AsyncStream<StoreWakeup> {
        let (stream, continuation) = AsyncStream.makeStream(of: StoreWakeup.self, bufferingPolicy: .bufferingNewest(64))
        let (client, logger, node) = (client, logger, node)
        let task = Task {
            var backoff = Backoff(base: 0.1, maximum: 2)
            var listening = false
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: "hub_wake") { notifications in
                            if listening { continuation.yield(.reconnected) }
                            listening = true
                            backoff.reset()
                            for try await notification in notifications {
                                if let wakeup = StoreWakeup(payload: notification.payload, me: node) {
                                    continuation.yield(wakeup)
                                }
                            }
                        }
                    }
                } catch {
                    logger.debug("listening for other nodes' commits stopped: \(String(reflecting: error))")
                }
                try? await Task.sleep(for: .seconds(backoff.fail()))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

/// A page of the change log (`changes(after:limit:)`), prepared once per connection.
struct ChangePage: PostgresPreparedStatement {
    static let sql = """
        SELECT c.seq, c.kind, c.hub, c.id, i.json, r.xml, r.created, r.updated, s.claimed IS NOT NULL AS claimed, s.secret_hash,
            (SELECT change_pruned FROM change_counter) AS pruned
        FROM (
            SELECT seq, kind, hub, id FROM change WHERE seq > $1 AND seq <= (SELECT MAX(seq) FROM change)
            ORDER BY seq LIMIT $2) c
        LEFT JOIN LATERAL (
            SELECT json FROM installation WHERE c.kind = '\(ChangeKind.installation.code)' AND hub = c.hub AND id = c.id LIMIT 1) i ON true
        LEFT JOIN LATERAL (
            SELECT xml, created, updated FROM registration WHERE c.kind = '\(ChangeKind.registration.code)' AND hub = c.hub AND id = c.id LIMIT 1) r ON true
        LEFT JOIN LATERAL (
            SELECT true AS claimed, secret_hash FROM sandbox_device
            WHERE c.kind = '\(ChangeKind.builtInPushDevice.code)' AND hub = c.hub AND device = c.id LIMIT 1) s ON true
        ORDER BY c.seq
        """

    let after: Int64
    let limit: Int64

    func makeBindings() throws -> PostgresBindings { PostgresHubStore.binds(after, limit) }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRandomAccessRow { row.makeRandomAccess() }
}
