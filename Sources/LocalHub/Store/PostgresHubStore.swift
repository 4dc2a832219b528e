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
    /// When a batch of installation upserts last found changes after its position
    /// (`DispatchTime` nanoseconds; 0 never): other nodes are writing.
    private let headMissed = Atomic<UInt64>(0)
    /// For how long after such a miss a batch goes straight to the full check.
    static let headMissWindow: UInt64 = 1_000_000_000

    /// Connects to `url` (`postgres://user[:password]@host[:port]/database`) and migrates;
    /// `password`, when given, in place of any in the URL (which `ps` shows every user).
    public init(url: String, password: String? = nil, node: String = UUID().uuidString.lowercased(), logger: Logger)
        async throws
    {
        let location = try PostgresLocation(url, password: password)
        client = PostgresClient(configuration: location.configuration, backgroundLogger: logger)
        reachability = location.reachability(client: client, logger: logger)
        let (client, reachability) = (client, reachability)
        runner = Mutex(Task { await Self.serve(client, reachability) })
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
            try await Self.withStoreErrors {
                try await client.withCancellableConnection { try await $0.withTransaction(logger: logger) { try await body($0) } }
            }
        }
    }

    func rows(_ query: PostgresQuery) async throws -> [PostgresRandomAccessRow] {
        let (client, logger) = (client, logger)
        return try await reachability.withDeadline {
            try await Self.withStoreErrors {
                try await client.withCancellableConnection {
                    try await $0.query(query, logger: logger).collect().map { $0.makeRandomAccess() }
                }
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
                try await client.withCancellableConnection {
                    try await $0.execute(statement, logger: logger).reduce(into: []) { $0.append($1) }
                }
            }
        }
    }

    public func load() async throws -> HubSnapshot {
        try await transaction { connection in
            var snapshot = HubSnapshot()
            var rejected: [(table: String, hub: String, id: String, record: QuarantinedRecord)] = []
            for try await row in try await connection.query("SELECT hub, id, json FROM installation", logger: self.logger) {
                let (hub, id, json) = try row.decode((String, String, String).self)
                do {
                    snapshot.installations.append((hub, try Installation.stored(json: json, id: id.utf8)))
                } catch {
                    rejected.append(
                        (
                            "installation", hub, id,
                            QuarantinedRecord(kind: "installation", storedHub: hub.utf8, storedId: id.utf8, reason: "\(error)")
                        ))
                }
            }
            for try await row in try await connection.query(
                "SELECT hub, id, xml, created, updated FROM registration", logger: self.logger)
            {
                let (hub, id, xml, created, updated) = try row.decode((String, String, String, Double, Double).self)
                do {
                    snapshot.registrations.append(
                        try StoredRegistration.stored(hub: hub, id: id.utf8, xml: xml, created: created, updated: updated))
                } catch {
                    rejected.append(
                        (
                            "registration", hub, id,
                            QuarantinedRecord(kind: "registration", storedHub: hub.utf8, storedId: id.utf8, reason: "\(error)")
                        ))
                }
            }
            for try await row in try await connection.query(
                "SELECT hub, device, secret_hash FROM sandbox_device", logger: self.logger)
            {
                let (hub, device, digest) = try row.decode((String, String, String?).self)
                if DeviceToken.isValid(device) {
                    snapshot.claimedDevices.append((hub, device.lowercased(), ClaimDigest.stored(digest)))
                }
            }
            let now = Date().timeIntervalSince1970
            for entry in rejected {
                let body = entry.table == "installation" ? "json" : "xml"
                try await connection.query(
                    PostgresQuery(
                        unsafeSQL: """
                            INSERT INTO quarantine (kind, hub, id, body, reason, at)
                            SELECT $1, convert_to(hub, 'UTF8'), convert_to(id, 'UTF8'), convert_to(\(body), 'UTF8'), $2, $3
                            FROM \(entry.table) WHERE hub = $4 AND id = $5
                            """,
                        binds: Self.binds(entry.table, entry.record.reason, now, entry.hub, entry.id)), logger: self.logger)
                try await connection.query(
                    PostgresQuery(
                        unsafeSQL: "DELETE FROM \(entry.table) WHERE hub = $1 AND id = $2", binds: Self.binds(entry.hub, entry.id)
                    ),
                    logger: self.logger)
            }
            snapshot.quarantined = rejected.map(\.record)
            let total = try await connection.query("SELECT COUNT(*) FROM quarantine", logger: self.logger).collect()
            snapshot.quarantinedTotal = try Int(total.first?.decode(Int64.self) ?? 0)
            return snapshot
        }
    }

    static func binds(_ values: any PostgresDynamicTypeEncodable...) -> PostgresBindings {
        var binds = PostgresBindings(capacity: values.count)
        for value in values { binds.append(value) }
        return binds
    }

    /// Runs of installation upserts and of notification inserts (what registration and send
    /// bursts bring) are written one statement per run; the rest one statement each. A batch
    /// of one run alone is one call of a procedure that commits before it answers (migration
    /// v9): one round trip, where BEGIN, the statement and COMMIT took three.
    @discardableResult
    public func apply(_ mutations: [HubMutation]) async throws -> ClosedRange<Int64>? {
        guard case .committed(let numbers) = try await commit(mutations, resolvedAt: nil) else {
            throw StoreFailure(description: "a commit without a resolution came back as moved")
        }
        return numbers
    }

    public func apply(_ mutations: [HubMutation], resolvedAt resolution: Resolution) async throws -> CommitOutcome {
        try await commit(mutations, resolvedAt: resolution)
    }

    /// Every commit that logs changes locks the change log's counter before any row, so two
    /// commits never wait on each other in turn; a resolution is checked under that lock, by
    /// a statement after it (one that waited for the lock sees what its holder committed).
    /// A commit that logs no change (sends, scheduled sends fired or cancelled) writes nothing
    /// a resolution is about, and is not checked.
    private func commit(_ mutations: [HubMutation], resolvedAt resolution: Resolution?) async throws -> CommitOutcome {
        guard !mutations.isEmpty else { return .committed(nil) }
        let now = Date().timeIntervalSince1970
        let sends = mutations.compactMap { if case .insertNotification(let n) = $0 { n } else { nil } }
        if sends.count == mutations.count {
            // Sends read nothing a resolution names.
            _ = try await rows(insertion(sends, now: now, committing: true))
            return .committed(nil)
        }
        let puts = mutations.compactMap { if case .upsertInstallation(let hub, let i) = $0 { (hub, i) } else { nil } }
        if puts.count == mutations.count { return try await putInstallations(puts, resolvedAt: resolution) }
        let logsChanges = mutations.contains(where: \.logsChange)
        return try await transaction { connection in
            // The counter before any row, as every commit that logs changes takes them.
            if logsChanges {
                // Checked against what is committed first, outside the lock; then, in it,
                // against what was committed since (as `put_installations` does).
                var seen: Int64?
                if let resolution {
                    guard
                        let checked = try await connection.execute(ChangedSince(resolution, seen: nil), logger: self.logger)
                            .reduce(into: [], { $0.append($1) }).first
                    else { throw Self.noNumbers(Int64(mutations.count)) }
                    guard try checked["moved"].decode(Bool?.self) == false else { return .moved }
                    seen = try checked["seen"].decode(Int64?.self)
                }
                let head = try await connection.query(
                    "SELECT value::bigint FROM meta WHERE key = 'change_seq' FOR UPDATE", logger: self.logger
                ).collect().first?.decode(Int64.self)
                if let resolution, let seen {
                    guard let head else { throw Self.noNumbers(Int64(mutations.count)) }
                    if head > seen {
                        let checked = try await connection.execute(ChangedSince(resolution, seen: seen), logger: self.logger)
                            .reduce(into: []) { $0.append($1) }.first
                        guard try checked?["moved"].decode(Bool?.self) == false else { return .moved }
                    }
                }
            }
            var changes: [(kind: String, hub: String, id: String)] = []
            var m = mutations.startIndex
            while m < mutations.endIndex {
                switch mutations[m] {
                case .upsertInstallation:
                    var run: [(hub: String, installation: Installation)] = []
                    while m < mutations.endIndex, case .upsertInstallation(let hub, let installation) = mutations[m] {
                        run.append((hub, installation))
                        m += 1
                    }
                    try await connection.query(Self.upsertion(run), logger: self.logger)
                    changes += run.map { ("i", $0.hub, $0.installation.installationId) }
                    continue
                case .insertNotification:
                    var run: [StoredNotification] = []
                    while m < mutations.endIndex, case .insertNotification(let n) = mutations[m] {
                        run.append(n)
                        m += 1
                    }
                    try await connection.query(self.insertion(run, now: now, committing: false), logger: self.logger)
                    continue
                case .deleteInstallation(let hub, let id):
                    try await connection.query("DELETE FROM installation WHERE hub = \(hub) AND id = \(id)", logger: self.logger)
                    changes.append(("i", hub, id))
                case .upsertRegistration(let stored):
                    try await connection.query(
                        """
                        INSERT INTO registration (hub, id, xml, created, updated)
                        VALUES (\(stored.hub), \(stored.id), \(stored.registration.descriptionXML), \(stored.created.timeIntervalSince1970), \(stored.updated.timeIntervalSince1970))
                        ON CONFLICT (hub, id) DO UPDATE SET xml = excluded.xml, created = excluded.created, updated = excluded.updated
                        """, logger: self.logger)
                    changes.append(("r", stored.hub, stored.id))
                case .deleteRegistration(let hub, let id):
                    try await connection.query("DELETE FROM registration WHERE hub = \(hub) AND id = \(id)", logger: self.logger)
                    changes.append(("r", hub, id))
                case .fireScheduled(let hub, let id):
                    try await connection.query(
                        "UPDATE notification SET state = 'Enqueued' WHERE hub = \(hub) AND id = \(id) AND state = 'Scheduled'",
                        logger: self.logger)
                case .beginDispatch(let hub, let id):
                    try await connection.query(
                        "UPDATE notification SET starts = starts + 1 WHERE hub = \(hub) AND id = \(id)", logger: self.logger)
                case .cancelScheduled(let hub, let id, let at):
                    try await connection.query(
                        """
                        UPDATE notification SET state = \(NotificationDetails.State.cancelled.rawValue), ended = \(at.timeIntervalSince1970)
                        WHERE hub = \(hub) AND id = \(id) AND state = 'Scheduled'
                        """, logger: self.logger)
                case .claimDevice(let hub, let device, let at, let digest):
                    let inserted =
                        try await connection.query(
                            """
                            INSERT INTO sandbox_device (hub, device, claimed, secret_hash)
                            VALUES (\(hub), \(device), \(at.timeIntervalSince1970), \(digest))
                            ON CONFLICT (hub, device) DO UPDATE SET claimed = excluded.claimed,
                                secret_hash = COALESCE(sandbox_device.secret_hash, excluded.secret_hash)
                            RETURNING (xmax = 0) AS inserted
                            """, logger: self.logger
                        ).collect().first?.makeRandomAccess()["inserted"].decode(Bool.self) ?? true
                    // A renewal changes nothing another node keeps in memory; a new secret does.
                    if inserted || digest != nil { changes.append(("s", hub, device)) }
                case .releaseDevice(let hub, let device):
                    try await connection.query(
                        "DELETE FROM sandbox_device WHERE hub = \(hub) AND device = \(device)", logger: self.logger)
                    changes.append(("s", hub, device))
                case .forgetDevice(let hub, let device):
                    // Nothing of it is kept in memory on any node: no change to log.
                    try await connection.query(
                        "DELETE FROM delivery WHERE hub = \(hub) AND device = \(device)", logger: self.logger)
                    try await connection.query(
                        "DELETE FROM device_gap WHERE hub = \(hub) AND device = \(device)", logger: self.logger)
                }
                m += 1
            }
            return .committed(try await self.appendChanges(changes, on: connection))
        }
    }

    /// Upserts a run of installations in one statement; of two with one id, the later.
    private static func upsertion(_ run: [(hub: String, installation: Installation)]) -> PostgresQuery {
        let rows = latest(run)
        return """
            INSERT INTO installation (hub, id, json)
            SELECT * FROM unnest(\(rows.map(\.hub)), \(rows.map(\.installation.installationId)), \(rows.map(\.installation.json.text)))
            ON CONFLICT (hub, id) DO UPDATE SET json = excluded.json
            """
    }

    /// Of entries with one hub and id, the last; in order.
    private static func latest(_ run: [(hub: String, installation: Installation)]) -> [(hub: String, installation: Installation)]
    {
        var latest: [String: Int] = [:]
        for (r, entry) in run.enumerated() { latest[entry.hub + "\u{0}" + entry.installation.installationId] = r }
        return latest.values.sorted().map { run[$0] }
    }

    /// A batch of installation upserts alone, in one call that commits before it answers: the
    /// counter's numbers, the rows, their entries in the change log and the wake-up.
    ///
    /// With a resolution, while no other node was seen writing for a second, first only if
    /// nothing was committed after its position (`PutAtHead`, checked on the counter's row
    /// under its lock); else, or when something was, with the full check under that lock
    /// (`put_installations`), which costs a node alone about a tenth of its ingest.
    private func putInstallations(_ run: [(hub: String, installation: Installation)], resolvedAt resolution: Resolution?)
        async throws -> CommitOutcome
    {
        let latest = Self.latest(run)
        let (hubs, ids, json) = (
            latest.map(\.hub), latest.map(\.installation.installationId), latest.map(\.installation.json.text)
        )
        let (changeHubs, changeIds) = (run.map(\.hub), run.map(\.installation.installationId))
        let (count, wake) = (Int64(run.count), StoreWakeup.changes.payload(from: node))
        if let resolution {
            let now = DispatchTime.now().uptimeNanoseconds
            let missed = headMissed.load(ordering: .relaxed)
            if missed == 0 || now > missed + Self.headMissWindow {
                let atHead = try await rows(
                    PutAtHead(
                        hubs: hubs, ids: ids, json: json, count: count, changeHubs: changeHubs, changeIds: changeIds, wake: wake,
                        position: resolution.position))
                if let last = try atHead.first?["last"].decode(Int64?.self) { return .committed((last - count + 1)...last) }
                headMissed.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
            }
        }
        let answer = try await rows(
            PutInstallations(
                hubs: hubs, ids: ids, json: json, changeHubs: changeHubs, changeIds: changeIds, wake: wake, resolution: resolution
            ))
        guard let last = try answer.first?["last"].decode(Int64?.self) else { return .moved }
        return .committed((last - count + 1)...last)
    }

    /// A commit that took no numbers for its changes: the counter is missing (a database
    /// this version did not migrate).
    private static func noNumbers(_ count: Int64) -> StoreFailure {
        StoreFailure(description: "the change log took no numbers for \(count) changes")
    }

    /// Inserts a run of notifications in one statement, claimed by this node (migration v9):
    /// `committing`, in a call that commits before it answers, outside any transaction (a
    /// batch of sends alone); else in the caller's transaction. Absent values travel as a
    /// flag beside an empty text, or as NaN for times.
    private func insertion(_ run: [StoredNotification], now: Double, committing: Bool) -> PostgresQuery {
        func time(_ date: Date?) -> Double { date?.timeIntervalSince1970 ?? .nan }
        let handles = run.map { n in n.batchHandles.map { JSONValue.array($0.map(JSONValue.string)).text } }
        var binds = Self.binds(
            run.map(\.hub), run.map(\.id), run.map(\.format.rawValue), run.map { $0.tagExpression ?? "" },
            run.map { $0.tagExpression == nil }, run.map(\.body), run.map { StoredCodec.encode($0.headers) },
            run.map { $0.directHandle ?? "" }, run.map { $0.directHandle == nil }, run.map(\.isTest),
            run.map(\.enqueued.timeIntervalSince1970), run.map(\.state.rawValue), run.map { time($0.started) },
            run.map { time($0.ended) }, run.map { StoredCodec.encode($0.outcomeCounts.mapValues(String.init)) },
            run.map { time($0.scheduledFor) }, handles.map { $0 ?? "" }, handles.map { $0 == nil })
        binds.append(node)
        binds.append(now + Self.leaseSeconds)
        let arguments = (1...20).map { "$\($0)" }.joined(separator: ", ")
        return PostgresQuery(
            unsafeSQL: committing ? "CALL commit_notifications(\(arguments))" : "SELECT insert_notifications(\(arguments))",
            binds: binds)
    }

    /// Seconds a node's claim on a notification it dispatches holds without being renewed.
    public static let leaseSeconds: Double = 10

    /// Numbers the changes after the last one committed and writes them, and wakes the other
    /// nodes (the notification goes out at commit); returns the numbers they took. The
    /// numbers come from a counter row (`meta` 'change_seq'), last in the transaction: its
    /// lock, held to the commit, makes the next commit wait for this one, so numbers become
    /// visible in the order they are taken, with none left out.
    private func appendChanges(_ changes: [(kind: String, hub: String, id: String)], on connection: PostgresConnection)
        async throws -> ClosedRange<Int64>?
    {
        guard !changes.isEmpty else { return nil }
        let count = Int64(changes.count)
        let last = try await connection.query(
            """
            WITH numbered AS (
                UPDATE meta SET value = (value::bigint + \(count))::text WHERE key = 'change_seq' RETURNING value::bigint AS last),
            added AS (
                INSERT INTO change (seq, kind, hub, id)
                SELECT numbered.last - \(count) + c.n, c.k, c.h, c.i
                FROM numbered, unnest(\(changes.map(\.kind)), \(changes.map(\.hub)), \(changes.map(\.id))) WITH ORDINALITY AS c(k, h, i, n))
            SELECT last, pg_notify('hub_wake', \(StoreWakeup.changes.payload(from: self.node))) FROM numbered
            """, logger: self.logger
        ).collect().first?.makeRandomAccess()["last"].decode(Int64.self)
        guard let last else { throw Self.noNumbers(count) }
        return (last - count + 1)...last
    }

    /// A batch of dispatches, deliveries and final states, in one call of `record_dispatches`
    /// (migration v8) that commits before it answers (`commit_dispatches`, v9), as every batch
    /// does: deliveries of a commit that failed would otherwise reach the streams under
    /// numbers the next dispatch takes.
    public func record(_ dispatches: [DispatchRecord]) async throws -> [Delivery] {
        guard !dispatches.isEmpty else { return [] }
        return try await record(dispatches.flatMap(\.deliveries), states: dispatches.map(\.notification))
    }

    /// Writes deliveries under the deliveries lock and the notifications' `states`; returns
    /// the deliveries written, numbered. Numbered ones are skipped when their number is taken;
    /// unnumbered ones are numbered after the highest number yet, and skipped when the device
    /// already has that notification from that template (a dispatch another node repeated).
    func record(_ deliveries: [Delivery], states: [StoredNotification]) async throws -> [Delivery] {
        let reports = states.map { StoredCodec.encode($0.report) }
        let query: PostgresQuery = """
            CALL commit_dispatches(
                \(deliveries.map(\.seq)), \(deliveries.map(\.hub)), \(deliveries.map(\.device)),
                \(deliveries.map(\.notificationId)), \(deliveries.map(\.template)), \(deliveries.map(\.payload)),
                \(deliveries.map { $0.delivered.timeIntervalSince1970 }), \(deliveries.map { $0.tags ?? "" }),
                \(deliveries.map { $0.tags == nil }),
                \(states.map(\.id)), \(states.map(\.state.rawValue)),
                \(states.map { $0.started?.timeIntervalSince1970 ?? .nan }), \(states.map { $0.ended?.timeIntervalSince1970 ?? .nan }),
                \(states.map { StoredCodec.encode($0.outcomeCounts.mapValues(String.init)) }),
                \(reports.map { $0 ?? "" }), \(reports.map { $0 == nil }), \(StoreWakeup.deliveries.payload(from: self.node)),
                NULL, NULL)
            """
        guard let answer = try await rows(query).first else {
            throw StoreFailure(description: "recording deliveries gave no answer")
        }
        let high = try answer["high"].decode(Int64.self)
        let skipped = Set(try answer["skipped"].decode([Int64].self))
        var next = high
        var written: [Delivery] = []
        for (position, var delivery) in deliveries.enumerated() {
            if delivery.seq == 0 {
                next += 1
                delivery.seq = next
            }
            if !skipped.contains(Int64(position + 1)) { written.append(delivery) }
        }
        return written
    }

    /// A notification row decoded and checked (`StoredNotification.stored`).
    static func notification(from row: PostgresRandomAccessRow) throws -> StoredNotification {
        func value<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T? where T._DecodableType == T {
            guard row.contains(column) else { return nil }
            return try row[column].decode(T?.self)
        }
        return try StoredNotification.stored(
            NotificationColumns(
                hub: try value("hub"), id: try value("id"), format: try value("format"), tags: try value("tags"),
                body: try value("body"), headers: try value("headers"), directHandle: try value("direct_handle"),
                test: try value("test"), enqueued: try value("enqueued"), state: try value("state"),
                started: try value("started"), ended: try value("ended"), outcome: try value("outcome"),
                fireAt: try value("fire_at"), directHandles: try value("direct_handles"), report: try value("report"),
                starts: try value("starts", as: Int32.self).map(Int64.init)))
    }

    /// A notification row, or nil (logged once) when it is not one a node could have written.
    func checkedNotification(_ row: PostgresRandomAccessRow) -> StoredNotification? {
        let id = (try? row["id"].decode(String.self)) ?? "?"
        do {
            return try Self.notification(from: row)
        } catch let reason as QuarantineReason {
            SkippedRows.shared.skip("notification \(id)", reason, logger: logger)
        } catch {
            SkippedRows.shared.skip("notification \(id)", QuarantineReason(description: "\(error)"), logger: logger)
        }
        return nil
    }

    public func unfinishedNotifications() async throws -> [StoredNotification] {
        try await dispatchable(
            try await rows("SELECT * FROM notification WHERE state IN ('Enqueued', 'Processing') ORDER BY seq"))
    }

    public func scheduledNotifications() async throws -> [StoredNotification] {
        try await dispatchable(try await rows("SELECT * FROM notification WHERE state = 'Scheduled' ORDER BY fire_at"))
    }

    /// Rows read to be dispatched, decoded; one that fails is moved to the quarantine (it would
    /// fail at every start and every claim) and left out.
    func dispatchable(_ rows: [PostgresRandomAccessRow]) async throws -> [StoredNotification] {
        var good: [StoredNotification] = []
        var bad: [(seq: Int64, reason: String)] = []
        for row in rows {
            do {
                good.append(try Self.notification(from: row))
            } catch {
                if let seq = try? row["seq"].decode(Int64.self) { bad.append((seq, "\(error)")) }
            }
        }
        guard !bad.isEmpty else { return good }
        _ = try await written(
            """
            WITH moved AS (
                DELETE FROM notification n USING unnest(\(bad.map(\.seq)), \(bad.map(\.reason))) AS b(s, r)
                WHERE n.seq = b.s RETURNING n.hub, n.id, n.body, b.r)
            INSERT INTO quarantine (kind, hub, id, body, reason, at)
            SELECT 'notification', convert_to(hub, 'UTF8'), convert_to(id, 'UTF8'), convert_to(body, 'UTF8'), r,
                \(Date().timeIntervalSince1970)
            FROM moved RETURNING seq
            """)
        for (seq, reason) in bad {
            SkippedRows.shared.skip(
                "notification row \(seq) (quarantined)", QuarantineReason(description: reason), logger: logger)
        }
        return good
    }

    public func notification(hub: String, id: String) async throws -> StoredNotification? {
        try await rows("SELECT * FROM notification WHERE hub = \(hub) AND id = \(id)").first.flatMap(checkedNotification)
    }

    /// A row of the log as a delivery, or nil (logged once) when it is not one a node wrote.
    func delivery(from row: PostgresRandomAccessRow) -> Delivery? {
        let seq = try? row["seq"].decode(Int64?.self)
        do {
            guard let device = try? row["device"].decode(String.self) else {
                throw QuarantineReason(description: "it has no device")
            }
            return try Delivery.stored(
                seq: seq, hub: try? row["hub"].decode(String?.self), device: device,
                notificationId: try? row["notification_id"].decode(String?.self),
                template: try? row["template"].decode(String?.self), payload: try? row["payload"].decode(String?.self),
                delivered: try? row["delivered"].decode(Double?.self), tags: try? row["tags"].decode(String?.self))
        } catch let reason as QuarantineReason {
            SkippedRows.shared.skip("delivery \(seq.map(String.init) ?? "?")", reason, logger: logger)
            return nil
        } catch {
            return nil
        }
    }

    public func deliveries(hub: String, device: String, after seq: Int64, limit: Int) async throws -> [Delivery] {
        try await rows(
            "SELECT * FROM delivery WHERE hub = \(hub) AND device = \(device) AND seq > \(seq) ORDER BY seq LIMIT \(limit)"
        ).compactMap(delivery(from:))
    }

    /// One prepared statement: a burst of streams opening (terminals coming back after a
    /// node restarts) read their gaps and backlogs in half the round trips, unplanned.
    public func backlog(hub: String, device: String, after since: Int64, limit: Int) async throws -> DeviceBacklog {
        let found = try await rows(DeviceBacklogPage(hub: hub, device: device, after: since, limit: Int64(limit)))
        var backlog = DeviceBacklog(gap: nil, deliveries: [])
        if let row = found.first, let from = try row["gap_from"].decode(Int64?.self),
            let through = try row["gap_through"].decode(Int64?.self), let count = try row["gap_count"].decode(Int64?.self)
        {
            backlog.gap = DeliveryGap(from: from, through: through, count: Int(count))
        }
        for row in found where try row["seq"].decode(Int64?.self) != nil {
            if let delivery = delivery(from: row) { backlog.deliveries.append(delivery) }
        }
        return backlog
    }

    public func deleteDeliveries(hub: String, device: String) async throws -> Int {
        try await written("DELETE FROM delivery WHERE hub = \(hub) AND device = \(device) RETURNING seq").count
    }

    public func staleClaims(before: Date, limit: Int) async throws -> [(hub: String, device: String)] {
        try await rows(
            """
            SELECT hub, device FROM sandbox_device WHERE claimed < \(before.timeIntervalSince1970)
            ORDER BY claimed LIMIT \(limit)
            """
        ).map { (try $0["hub"].decode(String.self), try $0["device"].decode(String.self)) }
    }

    public func devices(hub: String) async throws -> [(device: String, count: Int)] {
        try await rows("SELECT device, COUNT(*) AS n FROM delivery WHERE hub = \(hub) GROUP BY device ORDER BY device").map {
            (try $0["device"].decode(String.self), Int(try $0["n"].decode(Int64.self)))
        }
    }
}

/// A batch of installation upserts alone (`put_installations`, migration v7, committed by
/// `commit_put_installations`, v9), prepared once per connection: the last change-log number
/// it took, or null when its resolution moved.
struct PutInstallations: PostgresPreparedStatement {
    static let sql = "CALL commit_put_installations($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULL)"

    let hubs: [String]
    let ids: [String]
    let json: [String]
    let changeHubs: [String]
    let changeIds: [String]
    let wake: String
    let resolution: Resolution?

    func makeBindings() throws -> PostgresBindings {
        var binds = PostgresHubStore.binds(hubs, ids, json, changeHubs, changeIds, wake)
        if let resolution {
            binds.append(resolution.position)
            binds.append(resolution.room)
        } else {
            binds.appendNull()
            binds.appendNull()
        }
        ChangedSince.bind(resolution?.reads ?? [], to: &binds)
        return binds
    }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRandomAccessRow { row.makeRandomAccess() }
}

/// Whether a change after a resolution's position names a record its batch read in a way
/// that would have resolved it otherwise, or more changes came after it than its room
/// (`changed_since`, migration v7): through the counter's value as the statement sees it
/// (`seen` nil), or from `seen` through that value (the changes committed since, read once
/// the counter is locked). Answers the value too.
struct ChangedSince: PostgresPreparedStatement {
    static let sql = """
        SELECT v.head AS seen, v.head - $1 > $2
            OR (v.head > COALESCE($3, $1) AND changed_since(COALESCE($3, $1), v.head, $4, $5, $6, $7)) AS moved
        FROM (SELECT value::bigint AS head FROM meta WHERE key = 'change_seq') v
        """

    let resolution: Resolution
    let seen: Int64?

    init(_ resolution: Resolution, seen: Int64?) { (self.resolution, self.seen) = (resolution, seen) }

    static func bind(_ reads: [Resolution.Read], to binds: inout PostgresBindings) {
        binds.append(reads.map(\.kind))
        binds.append(reads.map(\.hub))
        binds.append(reads.map(\.id))
        binds.append(reads.map(\.exact))
    }

    func makeBindings() throws -> PostgresBindings {
        var binds = PostgresHubStore.binds(resolution.position, resolution.room)
        if let seen { binds.append(seen) } else { binds.appendNull() }
        Self.bind(resolution.reads, to: &binds)
        return binds
    }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRandomAccessRow { row.makeRandomAccess() }
}

/// A batch of installation upserts alone resolved at the head (`commit_put_at_head`,
/// migration v9): written only if nothing was committed after the position (checked on the
/// counter's row, under its lock).
struct PutAtHead: PostgresPreparedStatement {
    static let sql = "CALL commit_put_at_head($1, $2, $3, $4, $5, $6, $7, $8, NULL)"

    let hubs: [String]
    let ids: [String]
    let json: [String]
    let count: Int64
    let changeHubs: [String]
    let changeIds: [String]
    let wake: String
    let position: Int64

    func makeBindings() throws -> PostgresBindings {
        PostgresHubStore.binds(hubs, ids, json, count, changeHubs, changeIds, wake, position)
    }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRandomAccessRow { row.makeRandomAccess() }
}

/// A device's gap and its deliveries after both the resume point and the gap
/// (`backlog(hub:device:after:limit:)`), prepared once per connection: one row with no
/// delivery when it has none.
struct DeviceBacklogPage: PostgresPreparedStatement {
    static let sql = """
        SELECT g.gap_from, g.gap_through, g.gap_count, d.*
        FROM (SELECT 1) AS one
        LEFT JOIN device_gap g ON g.hub = $1 AND g.device = $2
        LEFT JOIN LATERAL (
            SELECT * FROM delivery WHERE hub = $1 AND device = $2 AND seq > GREATEST($3, g.gap_through)
            ORDER BY seq LIMIT $4) d ON true
        ORDER BY d.seq
        """

    let hub: String
    let device: String
    let after: Int64
    let limit: Int64

    func makeBindings() throws -> PostgresBindings { PostgresHubStore.binds(hub, device, after, limit) }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRandomAccessRow { row.makeRandomAccess() }
}
