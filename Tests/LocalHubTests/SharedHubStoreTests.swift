import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// What several nodes sharing one PostgreSQL database rely on (`SharedHubStore`), each test
/// on a database of its own, with one store per node as each node process opens it.
@Suite(.tags(.live, .postgres), .fullSuiteOnly) struct SharedHubStoreTests {
    /// `count` stores on one new database, as `count` nodes would open it.
    static func nodes(_ count: Int) async throws -> [PostgresHubStore] {
        let url = try await PostgresServer.shared().createDatabase()
        var stores: [PostgresHubStore] = []
        for n in 1...count {
            stores.append(try await PostgresHubStore.started(url: url, node: "node\(n)", logger: TestHub.quietLogger))
        }
        return stores
    }

    /// The scans of `table` and the rows read from it, sequentially or through an index, in
    /// the database of `url`, with its rows updated so far: read once every other session has
    /// ended and `settled` holds for the rows inserted and updated, which shows that the
    /// sessions to be counted have sent their statistics.
    static func reads(of table: String, in url: String, once settled: @escaping (_ inserted: Int, _ updated: Int) -> Bool)
        async throws -> (scans: Int, rows: Int, updated: Int)
    {
        try await eventually("the table statistics") {
            let row = try await PostgresServer.shared().psql(
                """
                SELECT seq_scan, seq_tup_read + COALESCE(idx_tup_fetch, 0), n_tup_ins, n_tup_upd,
                    (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid())
                FROM pg_stat_user_tables WHERE relname = '\(table)'
                """, database: url
            ).trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|").compactMap { Int($0) }
            return row.count == 5 && row[4] == 0 && settled(row[2], row[3]) ? (row[0], row[1], row[3]) : nil
        }
    }

    static func delivery(device: String, notification: String, template: String = "t") -> Delivery {
        Delivery(
            seq: 0, hub: "news", device: device, notificationId: notification, template: template,
            payload: #"{"aps":{"alert":"x"}}"#, delivered: Date(timeIntervalSince1970: 1_800_000_000), tags: "World")
    }

    /// Nodes started together on a new database (as the docs start them): every one opens it.
    /// Each used to create the migration table outside the lock, and all but one could fail
    /// on the catalog's unique index.
    @Test func nodesStartedTogetherOnANewDatabaseAllOpenIt() async throws {
        for _ in 0..<3 {
            let url = try await PostgresServer.shared().createDatabase()
            let stores = try await withThrowingTaskGroup(of: PostgresHubStore.self) { group in
                for n in 1...6 {
                    group.addTask { try await PostgresHubStore.started(url: url, node: "n\(n)", logger: TestHub.quietLogger) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(stores.count == 6)
            for store in stores { store.shutdown() }
        }
    }

    /// The trap of a shared log: numbers taken in one order and made visible in another let
    /// a reader that resumes after the highest number it saw skip a smaller one committed
    /// later. Four nodes commit at once while a reader follows the feed as a node does; it
    /// must end up with every delivery, each once, in increasing order.
    @Test func numbersBecomeVisibleInTheOrderTheyAreTaken() async throws {
        let stores = try await Self.nodes(4)
        defer { for store in stores { store.shutdown() } }
        let reader = stores[0]
        let written = try await withThrowingTaskGroup(of: [Delivery].self) { group in
            for (n, store) in stores.enumerated() {
                group.addTask {
                    var written: [Delivery] = []
                    for batch in 0..<40 {
                        let id = "n\(n)-\(batch)"
                        try await store.apply([.insertNotification(HubStoreConformanceTests.notification(id))])
                        let deliveries = (0..<5).map { Self.delivery(device: "d\($0)", notification: id) }
                        var done = HubStoreConformanceTests.notification(id)
                        done.state = .completed
                        written += try await store.record([DispatchRecord(notification: done, deliveries: deliveries)])
                    }
                    return written
                }
            }
            var all: [Delivery] = []
            for try await part in group { all += part }
            return all
        }
        // Followed while they commit, and once more after.
        var seen: [Int64] = []
        var cursor: Int64 = 0
        for _ in 0..<10_000 {
            let page = try await reader.deliveryFeed(after: cursor, limit: 50)
            seen += page.deliveries.map(\.seq)
            cursor = page.through ?? cursor
            if page.deliveries.isEmpty, seen.count >= written.count { break }
        }
        #expect(written.count == 4 * 40 * 5)
        #expect(seen == seen.sorted() && Set(seen).count == seen.count)
        #expect(Set(seen) == Set(written.map(\.seq)))
    }

    @Test func aDispatchRepeatedByAnotherNodeIsNotWrittenTwice() async throws {
        let stores = try await Self.nodes(2)
        defer { for store in stores { store.shutdown() } }
        try await stores[0].apply([.insertNotification(HubStoreConformanceTests.notification("n1"))])
        let first = [Self.delivery(device: "a", notification: "n1"), Self.delivery(device: "b", notification: "n1")]
        let again = first + [Self.delivery(device: "a", notification: "n1", template: "other")]
        let n1 = HubStoreConformanceTests.notification("n1")
        #expect(try await stores[0].record([DispatchRecord(notification: n1, deliveries: first)]).count == 2)
        let repeated = try await stores[1].record([DispatchRecord(notification: n1, deliveries: again)])
        #expect(repeated.map(\.template) == ["other"])
        #expect(try await stores[1].deliveries(hub: "news", device: "a", after: 0, limit: 10).count == 2)
    }

    /// Retention by age cuts the numbers before the first delivery as young as the horizon.
    /// A node whose clock is behind dates a later delivery older; cut through the highest
    /// number dated older, a younger delivery numbered before it went too.
    @Test func retentionByAgeKeepsEveryDeliveryFromTheFirstYoungOne() async throws {
        let stores = try await Self.nodes(2)
        defer { for store in stores { store.shutdown() } }
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        func dated(_ device: String, _ notification: String, at offset: Double) -> Delivery {
            var delivery = Self.delivery(device: device, notification: notification)
            delivery.delivered = t0.addingTimeInterval(offset)
            return delivery
        }
        // The third send is dated by a node whose clock is behind.
        let sends: [(node: Int, offset: Double)] = [(0, 1), (1, 101), (1, 1)]
        for (n, send) in sends.enumerated() {
            let notification = HubStoreConformanceTests.notification("n\(n)")
            try await stores[send.node].apply([.insertNotification(notification)])
            _ = try await stores[send.node].record([
                DispatchRecord(notification: notification, deliveries: [dated("a", "n\(n)", at: send.offset)])
            ])
        }
        let report = try await stores[0].prune(before: t0.addingTimeInterval(50), maximumLogBytes: 1 << 30)
        #expect(report.deliveries == 1)
        #expect(
            try await stores[1].deliveries(hub: "news", device: "a", after: 0, limit: 10).map(\.notificationId) == ["n1", "n2"])
        #expect(try await stores[1].gap(hub: "news", device: "a") == DeliveryGap(from: 1, through: 1, count: 1))
    }

    /// Whether a repeated dispatch already wrote a delivery is looked up among the deliveries
    /// of the batch's own notifications. Checked row by row against the whole log,
    /// PostgreSQL read and hashed every delivery in it at each dispatch, so
    /// dispatches slowed as the log grew. The statistics PostgreSQL keeps show whether the
    /// log was read whole (a sequential scan).
    @Test func aDispatchReadsOnlyTheDeliveriesOfItsOwnNotifications() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        // Each store's sessions send their statistics as they end, at its shutdown.
        func dispatch(_ ids: [String]) async throws {
            let store = try await PostgresHubStore.started(url: url, node: "node1", logger: TestHub.quietLogger)
            defer { store.shutdown() }
            for id in ids {
                try await store.apply([.insertNotification(HubStoreConformanceTests.notification(id))])
                let deliveries = (0..<500).map { Self.delivery(device: "d\($0)", notification: id) }
                var done = HubStoreConformanceTests.notification(id)
                done.state = .completed
                #expect(try await store.record([DispatchRecord(notification: done, deliveries: deliveries)]).count == 500)
            }
        }
        try await dispatch((0..<6).map { "old-\($0)" })
        _ = try await PostgresServer.shared().psql("ANALYZE delivery", database: url)
        let before = try await Self.reads(of: "delivery", in: url) { inserted, _ in inserted >= 3_000 }
        try await dispatch(["new"])
        let after = try await Self.reads(of: "delivery", in: url) { inserted, _ in inserted >= 3_500 }
        #expect(after.scans == before.scans)
        #expect(after.rows - before.rows < 500, "read \(after.rows - before.rows) deliveries")
    }

    /// A session keeps one plan for a function's statements after a few calls, made for the
    /// tables as they were then. Recording final states looked notifications up by a
    /// sequential scan when that plan was made on a small table, and went on reading every
    /// notification at each call as the table grew.
    @Test func recordingStatesReadsNotificationsByIndexHoweverTheTableGrew() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let store = try await PostgresHubStore.started(url: url, node: "node1", logger: TestHub.quietLogger)
        defer { store.shutdown() }
        try await store.apply([.insertNotification(HubStoreConformanceTests.notification("n1"))])
        let call = """
            SELECT * FROM record_dispatches('{}'::bigint[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::text[],
                '{}'::text[], '{}'::float8[], '{}'::text[], '{}'::boolean[], ARRAY['n1'], ARRAY['Completed'],
                ARRAY[1.0::float8], ARRAY[2.0::float8], ARRAY['{}'], ARRAY[''], ARRAY[true], 'w');
            """
        let scans = "INSERT INTO scans SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'notification';"
        let grow = """
            INSERT INTO notification (hub, id, format, body, headers, test, enqueued, state, outcome)
            SELECT 'news', 'g' || g, 'template', '{}', '{}', false, 0, 'Completed', '{}' FROM generate_series(1, 20000) g;
            """
        // One session: eight calls on a table of one row, then the table grown, then a call.
        let output = try await PostgresServer.shared().psql(
            "CREATE TEMP TABLE scans (n bigint);" + String(repeating: call, count: 8) + grow + scans + call + scans
                + "SELECT 'scans ' || string_agg(n::text, ' ') FROM scans;", database: url)
        let counts = output.split(separator: "\n").last.map { $0.split(separator: " ").dropFirst() }.map(Array.init) ?? []
        #expect(counts.count == 2 && counts[0] == counts[1], "\(output)")
    }

    /// One batch of every kind of delivery the store is given: numbered and free, numbered
    /// and taken, unnumbered and repeated, unnumbered and new. The deliveries it says it wrote,
    /// with their numbers, are the ones a device then reads; a repeat leaves its number unused.
    @Test func aMixedBatchIsWrittenAsItSays() async throws {
        let stores = try await Self.nodes(1)
        let store = stores[0]
        defer { store.shutdown() }
        try await store.apply([.insertNotification(HubStoreConformanceTests.notification("n1"))])
        let n1 = HubStoreConformanceTests.notification("n1")
        let first = try await store.record([
            DispatchRecord(notification: n1, deliveries: [Self.delivery(device: "a", notification: "n1")])
        ])
        #expect(first.map(\.seq) == [1])
        var taken = Self.delivery(device: "x", notification: "n1")
        taken.seq = 1
        var free = Self.delivery(device: "z", notification: "n1")
        free.seq = 9_999
        let batch = [taken, Self.delivery(device: "a", notification: "n1"), Self.delivery(device: "b", notification: "n1"), free]
        let written = try await store.record([DispatchRecord(notification: n1, deliveries: batch)])
        #expect(written.map { "\($0.device)@\($0.seq)" } == ["b@3", "z@9999"])
        for (device, seqs) in [("a", [1]), ("b", [3]), ("x", []), ("z", [9_999])] as [(String, [Int64])] {
            #expect(try await store.deliveries(hub: "news", device: device, after: 0, limit: 10).map(\.seq) == seqs)
        }
    }

    /// The store's numbering and its check of a write at its commit read, in one
    /// transaction, what committed while they waited for a lock: they need each statement to
    /// see the latest commits. A database (or role) whose default is a stricter level gets
    /// READ COMMITTED on the store's sessions all the same.
    @Test func theStoreReadsCommittedWhateverTheDatabasesDefault() async throws {
        let name = "test_isolation_\(UInt32.random(in: 0...UInt32.max))"
        let url = try await PostgresServer.shared().createDatabase(name)
        _ = try await PostgresServer.shared().psql(
            "ALTER DATABASE \"\(name)\" SET default_transaction_isolation = 'serializable'", database: url)
        #expect(try await PostgresServer.shared().psql("SHOW transaction_isolation", database: url).contains("serializable"))
        let store = try await PostgresHubStore.started(url: url, node: "node1", logger: TestHub.quietLogger)
        defer { store.shutdown() }
        let level = try await store.transaction { connection in
            try await connection.query("SHOW transaction_isolation", logger: TestHub.quietLogger).collect().first?
                .decode(String.self)
        }
        #expect(level == "read committed")
    }

    /// Run by itself, a statement is answered at its CommandComplete, which PostgreSQL sends
    /// before the commit that ends it. A commit that fails after the statement ran (here a
    /// trigger deferred to the commit; in life a full NOTIFY queue or a failed WAL flush) must
    /// be the write's error, not writes answered as written and lost: each batch's procedure
    /// (migration v9) commits inside its CALL.
    @Test func aWriteWhoseCommitFailsIsNotAnsweredAsWritten() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let store = try await PostgresHubStore.started(url: url, node: "node1", logger: TestHub.quietLogger)
        defer { store.shutdown() }
        try await Self.refuseAtCommit(["INSERT ON installation", "INSERT ON notification", "INSERT ON delivery"], in: url)
        let put = HubMutation.upsertInstallation(hub: "news", try HubStoreConformanceTests.installation("i1"))
        // At the head of the log (`commit_put_at_head`), and with the full check
        // (`commit_put_installations`, which a batch without a resolution goes to).
        await Self.expectRefusedAtCommit { _ = try await store.apply([put], resolvedAt: Resolution(position: 0)) }
        await Self.expectRefusedAtCommit { _ = try await store.apply([put]) }
        await Self.expectRefusedAtCommit {
            _ = try await store.apply([.insertNotification(HubStoreConformanceTests.notification("n1"))])
        }
        // A dispatch's deliveries, which a stream would otherwise be given under numbers the
        // next dispatch takes.
        await Self.expectRefusedAtCommit {
            _ = try await store.record([
                DispatchRecord(
                    notification: HubStoreConformanceTests.notification("n2"),
                    deliveries: [Self.delivery(device: "ab", notification: "n2")])
            ])
        }
        let kept = try await PostgresServer.shared().psql(
            """
            SELECT (SELECT count(*) FROM installation) || ' ' || (SELECT count(*) FROM notification)
                || ' ' || (SELECT count(*) FROM delivery)
            """, database: url)
        #expect(kept.trimmingCharacters(in: .whitespacesAndNewlines) == "0 0 0")
    }

    /// The writes a client is answered for outside the batches (cancelling a scheduled send,
    /// erasing a device's deliveries, the numbers a restore reserves) wait for their commit
    /// too.
    @Test func aCancelEraseOrReservationWhoseCommitFailsIsNotAnsweredAsDone() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let store = try await PostgresHubStore.started(url: url, node: "node1", logger: TestHub.quietLogger)
        defer { store.shutdown() }
        var scheduled = HubStoreConformanceTests.notification("n1")
        scheduled.state = .scheduled
        scheduled.scheduledFor = Date().addingTimeInterval(3600)
        try await store.apply([.insertNotification(scheduled)])
        _ = try await store.record([
            DispatchRecord(
                notification: HubStoreConformanceTests.notification("n2"),
                deliveries: [Self.delivery(device: "ab", notification: "n2")])
        ])
        try await Self.refuseAtCommit(["UPDATE ON notification", "DELETE ON delivery", "UPDATE ON delivery_counter"], in: url)
        await Self.expectRefusedAtCommit { _ = try await store.cancelScheduled(hub: "news", id: "n1", at: Date()) }
        await Self.expectRefusedAtCommit { _ = try await store.deleteDeliveries(hub: "news", device: "ab") }
        await Self.expectRefusedAtCommit { try await store.reserveSequence(through: 1_000) }
        let kept = try await PostgresServer.shared().psql(
            """
            SELECT (SELECT state FROM notification WHERE id = 'n1') || ' ' || (SELECT count(*) FROM delivery)
                || ' ' || (SELECT seq_reserved FROM delivery_counter)
            """, database: url)
        #expect(kept.trimmingCharacters(in: .whitespacesAndNewlines) == "Scheduled 1 0")
    }

    /// Triggers deferred to the commit that refuse it, for each event ("INSERT ON delivery"):
    /// what a full NOTIFY queue or a failed WAL flush does in life.
    static func refuseAtCommit(_ events: [String], in url: String) async throws {
        let triggers = events.enumerated().map { n, event in
            """
            CREATE CONSTRAINT TRIGGER refuse_\(n) AFTER \(event)
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse();
            """
        }
        _ = try await PostgresServer.shared().psql(
            """
            CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$;
            \(triggers.joined(separator: "\n"))
            """, database: url)
    }

    /// The write failed with the deferred trigger's error, not with another one (a call
    /// PostgreSQL refused, an answer that did not decode).
    static func expectRefusedAtCommit(_ write: () async throws -> Void) async {
        do {
            try await write()
            Issue.record("answered as done, though its commit was refused")
        } catch {
            #expect(String(reflecting: error).contains("refused at commit"), "\(String(reflecting: error))")
        }
    }

    /// How the notification table may stand when a node claims: what its statistics say,
    /// against what it holds.
    enum ClaimTableState: CaseIterable {
        /// Statistics made during a burst of this node's unfinished sends (as in a cluster's
        /// first minutes), then the burst finished and the table grown past them.
        case afterABurstOfUnfinished
        /// The same with a burst of scheduled sends.
        case afterABurstOfScheduled
        /// Fresh statistics, with 3,000 of this node's sends in flight.
        case manyInFlight
    }

    /// The table keeps finished sends for their retention. Every node renews its leases and
    /// claims lapsed and due sends about once a second, takes its claims back at start, and
    /// counts a hub's scheduled sends at every scheduled send. Each of these read the whole
    /// table, growing with the days kept: the claim's one condition with OR in the order of
    /// the primary key, the others in some of these states. They read only the unfinished
    /// and the scheduled sends, however many are kept and whatever the planner knows.
    @Test(arguments: ClaimTableState.allCases)
    func claimsAndCountsReadOnlyUnfinishedAndScheduledSends(_ state: ClaimTableState) async throws {
        let url = try await PostgresServer.shared().createDatabase()
        try await PostgresHubStore.started(url: url, node: "node1", logger: TestHub.quietLogger).shutdown()
        let inFlight = state == .manyInFlight ? 3_000 : 0
        func sends(_ id: String, count: Int, state: String, owner: String = "NULL", lease: String = "0", fireAt: String = "NULL")
            -> String
        {
            """
            INSERT INTO notification (hub, id, format, body, headers, test, enqueued, state, outcome, owner, lease_until, fire_at)
            SELECT 'news', '\(id)' || g, 'template', '{}', '{}', false, 1e9, '\(state)', '{}', \(owner), \(lease), \(fireAt)
            FROM generate_series(1, \(count)) g;
            """
        }
        // The planner's picture stays as each state sets it: no autovacuum on the table.
        var setup =
            "ALTER TABLE notification SET (autovacuum_enabled = false);"
            + sends("lapsed", count: 1, state: "Enqueued", owner: "'node1'", lease: "1")
            + sends("due", count: 1, state: "Scheduled", fireAt: "1e9")
            + sends("held", count: 1 + inFlight, state: "Enqueued", owner: "'claimer'", lease: "4e9")
        switch state {
        case .afterABurstOfUnfinished, .afterABurstOfScheduled:
            setup +=
                (state == .afterABurstOfUnfinished
                    ? sends("burst", count: 2_000, state: "Enqueued", owner: "'claimer'", lease: "4e9")
                    : sends("burst", count: 2_000, state: "Scheduled", fireAt: "4e9 + random() * 1e6"))
                + "ANALYZE notification; UPDATE notification SET state = 'Completed', ended = 1e9 WHERE id LIKE 'burst%';"
                + sends("done", count: 20_000, state: "Completed")
        case .manyInFlight:
            setup += sends("done", count: 20_000, state: "Completed") + "ANALYZE notification;"
        }
        _ = try await PostgresServer.shared().psql(setup, database: url)
        // Every row the setup inserted counted first, then the claimer's updates.
        let inserted = 3 + inFlight + 20_000 + (state == .manyInFlight ? 0 : 2_000)
        let before = try await Self.reads(of: "notification", in: url) { rows, _ in rows >= inserted }
        let claimer = try await PostgresHubStore.started(url: url, node: "claimer", logger: TestHub.quietLogger)
        let takenBack = try await claimer.takeBackClaims(now: Date())
        let scheduled = try await claimer.scheduledCount(hub: "news")
        let later = Date().addingTimeInterval(PostgresHubStore.leaseSeconds + 1)
        let claimed = try await claimer.claimNotifications(now: later, limit: 10).map(\.id).sorted()
        claimer.shutdown()
        #expect(takenBack.count == 1 + inFlight && scheduled == 1 && claimed == ["due1", "lapsed1"], "\(scheduled) \(claimed)")
        // Taken back and renewed: this node's own; claimed: the two.
        let after = try await Self.reads(of: "notification", in: url) { _, updated in
            updated >= before.updated + 2 * (1 + inFlight) + 2
        }
        #expect(after.scans == before.scans)
        // The unfinished ones are read a few times: found and updated to take them back and to
        // renew them, passed over to find lapsed ones.
        #expect(after.rows - before.rows < 1_000 + 6 * inFlight, "read \(after.rows - before.rows) rows")
    }

    /// A node that starts takes back the sends it still owns. Another node's claim may hold
    /// one of them at that moment without taking it (its limit left it to a later claim).
    /// Skipped, that send kept this node as its owner: renewed each second, dispatched by no
    /// node. Taking back waits for it.
    @Test func takingClaimsBackWaitsForAClaimThatHoldsOne() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let node = try await PostgresHubStore.started(url: url, node: "node1", logger: TestHub.quietLogger)
        defer { node.shutdown() }
        try await node.apply([.insertNotification(HubStoreConformanceTests.notification("n1"))])
        // The other node's claim: a session holding the row's lock for two seconds.
        let marker = "held-by-another-claim"
        let claim = Task {
            try await PostgresServer.shared().psql(
                "BEGIN; SELECT seq FROM notification WHERE id = 'n1' FOR UPDATE; SELECT pg_sleep(2), '\(marker)'; COMMIT;",
                database: url)
        }
        _ = try await eventually("the statement to hold its connection") {
            let holding = try await PostgresServer.shared().psql(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%SELECT pg_sleep(2), ''\(marker)''%' AND wait_event = 'PgSleep'",
                database: url)
            return holding.trimmingCharacters(in: .whitespacesAndNewlines) == "1" ? true : nil
        }
        let taken = try await node.takeBackClaims(now: Date())
        _ = try await claim.value
        #expect(taken.map(\.id) == ["n1"])
    }

    @Test func aClaimHoldsWhileRenewedAndIsTakenOverOnceItExpires() async throws {
        let stores = try await Self.nodes(2)
        defer { for store in stores { store.shutdown() } }
        let (a, b) = (stores[0], stores[1])
        try await a.apply([.insertNotification(HubStoreConformanceTests.notification("n1"))])
        let now = Date()
        #expect(try await b.claimNotifications(now: now, limit: 10).isEmpty)
        // a renews its claim; b looks past the old lease, not past the renewed one.
        _ = try await a.claimNotifications(now: now.addingTimeInterval(5), limit: 10)
        #expect(try await b.claimNotifications(now: now.addingTimeInterval(PostgresHubStore.leaseSeconds + 1), limit: 10).isEmpty)
        // a stops renewing: b takes it over, once.
        let later = now.addingTimeInterval(5 + PostgresHubStore.leaseSeconds + 1)
        #expect(try await b.claimNotifications(now: later, limit: 10).map(\.id) == ["n1"])
        #expect(try await b.claimNotifications(now: later, limit: 10).isEmpty)
        #expect(try await a.claimNotifications(now: later.addingTimeInterval(1), limit: 10).isEmpty)
        // Finished, it is nobody's to take.
        var done = HubStoreConformanceTests.notification("n1")
        done.state = .completed
        _ = try await b.record([DispatchRecord(notification: done, deliveries: [])])
        #expect(try await a.claimNotifications(now: later.addingTimeInterval(60), limit: 10).isEmpty)
    }

    /// A node killed and started again under its name: its claims are renewed by the new
    /// process, so it must take them back itself, or no node ever sends them.
    @Test func aNodeRestartedUnderItsNameTakesBackWhatItHadAccepted() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let first = try await PostgresHubStore.started(url: url, node: "node1", logger: TestHub.quietLogger)
        try await first.apply([
            .insertNotification(HubStoreConformanceTests.notification("n1")),
            .insertNotification(HubStoreConformanceTests.notification("n2", at: 1)),
        ])
        var done = HubStoreConformanceTests.notification("n2", at: 1)
        done.state = .completed
        _ = try await first.record([DispatchRecord(notification: done, deliveries: [])])
        first.shutdown()
        let again = try await PostgresHubStore.started(url: url, node: "node1", logger: TestHub.quietLogger)
        defer { again.shutdown() }
        #expect(try await again.takeBackClaims(now: Date()).map(\.id) == ["n1"])
        // Its renewals hold the claim from then on.
        #expect(try await again.claimNotifications(now: Date(), limit: 10).isEmpty)
    }

    @Test func aScheduledSendFiresOnOneNodeOnlyAndACancelledOneOnNone() async throws {
        let stores = try await Self.nodes(3)
        defer { for store in stores { store.shutdown() } }
        let at = Date().addingTimeInterval(60)
        var mutations: [HubMutation] = []
        for id in ["s1", "s2", "s3"] {
            var scheduled = HubStoreConformanceTests.notification(id)
            scheduled.state = .scheduled
            scheduled.scheduledFor = at
            mutations.append(.insertNotification(scheduled))
        }
        try await stores[0].apply(mutations)
        #expect(try await stores[1].scheduledCount(hub: "news") == 3)
        #expect(try await stores[1].cancelScheduled(hub: "news", id: "s2", at: Date()))
        #expect(try await !stores[2].cancelScheduled(hub: "news", id: "s2", at: Date()))
        #expect(try await stores[0].claimNotifications(now: at.addingTimeInterval(-1), limit: 10).isEmpty)
        let claimed = try await withThrowingTaskGroup(of: [String].self) { group in
            for store in stores { group.addTask { try await store.claimNotifications(now: at, limit: 10).map(\.id) } }
            var all: [String] = []
            for try await ids in group { all += ids }
            return all
        }
        #expect(claimed.sorted() == ["s1", "s3"])
        #expect(try await !stores[0].cancelScheduled(hub: "news", id: "s1", at: Date()))
        #expect(try await stores[0].notification(hub: "news", id: "s1")?.state == .enqueued)
    }

    @Test func theChangeLogNamesEveryWriteWithTheRowAsItIsNow() async throws {
        let stores = try await Self.nodes(2)
        defer { for store in stores { store.shutdown() } }
        let head = try await stores[1].changeHead()
        try await stores[0].apply([
            .upsertInstallation(hub: "news", try HubStoreConformanceTests.installation("a")),
            .upsertRegistration(HubStoreConformanceTests.registration(hub: "news", id: "r1")),
            .claimDevice(hub: "news", device: "ab12", at: Date()),
            .claimDevice(hub: "news", device: "cd34", at: Date()),
        ])
        try await stores[0].apply([
            .upsertInstallation(hub: "news", try HubStoreConformanceTests.installation("a", tags: ["Sports"])),
            .deleteRegistration(hub: "news", id: "r1"),
            // A renewal changes nothing another node keeps; a release does.
            .claimDevice(hub: "news", device: "ab12", at: Date() + 60),
            .releaseDevice(hub: "news", device: "cd34"),
        ])
        let changes = try await stores[1].changes(after: head, limit: 100)
        #expect(changes.map(\.seq) == Array(head + 1...head + 7))
        var installations: [String: [String]] = [:]
        var registrations: [String: Bool] = [:]
        var devices: [String: [Bool]] = [:]
        for change in changes {
            switch change.row {
            case .installation(_, let id, let installation): installations[id] = installation?.tags
            case .registration(_, let id, let stored): registrations[id] = stored != nil
            case .claim(_, let device, let claimed, _): devices[device, default: []].append(claimed)
            case .applied(let record): Issue.record("nothing was applied ahead, yet \(record) reads as applied")
            }
        }
        // Both entries of `a` read the row as it is now; the deleted registration reads as gone.
        #expect(installations == ["a": ["Sports"]])
        #expect(registrations == ["r1": false])
        #expect(devices == ["ab12": [true], "cd34": [false, false]])
        #expect(try await stores[1].changes(after: head + 7, limit: 100).isEmpty)
        // Records a reader applied at a number (its own commit's last, in any case of the hub
        // and the token) are not read at that number or before; later changes of them are.
        let skipping = try await stores[1].changes(
            after: head, limit: 100,
            applied: [
                ChangedRecord(kind: .installation, hub: "NEWS", id: "a"): head + 1,
                ChangedRecord(kind: .builtInPushDevice, hub: "news", id: "CD34"): head + 7,
            ])
        let applied = skipping.compactMap { change -> Int64? in
            if case .applied = change.row { return change.seq }
            return nil
        }
        #expect(applied == [head + 1, head + 4, head + 7])
        #expect(skipping.map(\.seq) == Array(head + 1...head + 7))
    }

    @Test func everyNodeServesTheKeysTheFirstOneKept() async throws {
        let stores = try await Self.nodes(2)
        defer { for store in stores { store.shutdown() } }
        func rule(_ name: String, _ key: String) -> AuthorizationRule {
            AuthorizationRule(name: name, primaryKey: key, secondaryKey: key + "-2", rights: .listen)
        }
        let first = try await stores[0].sharedKeys(
            adding: LocalHubKeyFile.Contents(hubs: ["news": [rule("Full", "k2"), rule("Listen", "k1")]]))
        let second = try await stores[1].sharedKeys(
            adding: LocalHubKeyFile.Contents(hubs: [
                "news": [rule("Full", "other"), rule("Listen", "other")], "more": [rule("Full", "k3")],
            ]))
        #expect(first.hubs == ["news": [rule("Full", "k2"), rule("Listen", "k1")]])
        #expect(second.hubs == ["news": [rule("Full", "k2"), rule("Listen", "k1")], "more": [rule("Full", "k3")]])
        // What a node reads while it runs is what they agreed on.
        #expect(try await stores[0].storedKeys()?.hubs == second.hubs)
    }

    /// A node trusts no row (issue 26, item 7): on `main` an installation given 50,000 tags in
    /// the database by hand was served (the limit is 60), and a bad row was skipped silently
    /// until a restart quarantined it. Now the row reads as deleted, goes aside at once, once.
    @Test func aRowWrittenByHandIsCheckedAsARequestAndQuarantinedAtOnce() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let writer = try await PostgresHubStore.started(url: url, node: "writer", logger: TestHub.quietLogger)
        let reader = try await PostgresHubStore.started(url: url, node: "reader", logger: TestHub.quietLogger)
        defer { for store in [writer, reader] { store.shutdown() } }
        let head = try await reader.changeHead()
        try await writer.apply([.upsertInstallation(hub: "news", try HubStoreConformanceTests.installation("a"))])
        // By hand: 500 tags (a request may give 60), and a change-log entry for it, as another
        // node would write.
        _ = try await PostgresServer.shared().psql(
            """
            UPDATE installation SET json = json_build_object('installationId', 'a', 'platform', 'apns',
                'pushChannel', 'ab12', 'tags', (SELECT json_agg('t' || g) FROM generate_series(1, 500) g))::text
            WHERE id = 'a';
            INSERT INTO change (seq, kind, hub, id) SELECT MAX(seq) + 1, 'i', 'news', 'a' FROM change;
            """, database: url)
        let changes = try await reader.changes(after: head, limit: 10)
        #expect(changes.count == 2)
        #expect(changes.allSatisfy { if case .installation(_, _, nil) = $0.row { true } else { false } })
        #expect(changes.filter(\.quarantined).count == 1, "moved aside once, by the first read")
        let kept = try await PostgresServer.shared().psql(
            "SELECT (SELECT COUNT(*) FROM installation), (SELECT COUNT(*) FROM quarantine)", database: url)
        #expect(kept.trimmingCharacters(in: .whitespacesAndNewlines) == "0|1")
        let reason = try await PostgresServer.shared().psql("SELECT reason FROM quarantine", database: url)
        #expect(reason.contains("tags"), "\(reason)")
        // Read again: nothing more to move.
        #expect(try await reader.changes(after: head, limit: 10).filter(\.quarantined).isEmpty)
    }

    /// A delivery row written by hand is checked before a stream carries it: on `main` a
    /// payload with a line break went into a stream frame as it was, and the row's writer
    /// could start frames of its own (another id, another news). Such rows are skipped, and a
    /// run of them longer than a page does not stall the feed.
    @Test func deliveryRowsWrittenByHandAreCheckedBeforeAStreamCarriesThem() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let writer = try await PostgresHubStore.started(url: url, node: "writer", logger: TestHub.quietLogger)
        let reader = try await PostgresHubStore.started(url: url, node: "reader", logger: TestHub.quietLogger)
        defer { for store in [writer, reader] { store.shutdown() } }
        try await writer.apply([.insertNotification(HubStoreConformanceTests.notification("n1"))])
        var done = HubStoreConformanceTests.notification("n1")
        done.state = .completed
        _ = try await writer.record([
            DispatchRecord(notification: done, deliveries: [Self.delivery(device: "ab12", notification: "n1")])
        ])
        let injected = #"{"aps":{"alert":"x"}}\n\nid: 999999\ndata: {"seq":999999}"#
        _ = try await PostgresServer.shared().psql(
            """
            INSERT INTO delivery_v1 (seq, hub, device, notification_id, template, payload, delivered, tags)
            SELECT (SELECT MAX(seq) FROM delivery) + g, 'news', 'ab12', 'n1', 't',
                CASE WHEN g % 3 = 0 THEN E'\(injected)' WHEN g % 3 = 1 THEN 'not json' ELSE repeat('x', 100000) END,
                1800000000, NULL
            FROM generate_series(1, 120) g;
            INSERT INTO payload (id, hub, notification_id, template, tags, delivered, body, first_seq, last_seq)
            SELECT 999, 'news', 'n1', 't', NULL, 1800000000, E'\(injected)', MAX(seq) + 1, MAX(seq) + 1 FROM delivery_v1;
            INSERT INTO delivery (seq, device, payload)
            SELECT (SELECT MAX(seq) + 1 FROM delivery_v1), (SELECT id FROM device_ref WHERE device = 'ab12'), 999;
            INSERT INTO delivery_v1 (seq, hub, device, notification_id, template, payload, delivered, tags)
            SELECT MAX(seq) + 1, 'news', 'ab12', 'n2', 't', '{"aps":{"alert":"after"}}', 1800000000, NULL FROM delivery;
            """, database: url)
        let backlog = try await reader.deliveries(hub: "news", device: "ab12", after: 0, limit: 1000)
        #expect(backlog.map(\.notificationId) == ["n1", "n2"], "\(backlog.map(\.payload))")
        var cursor: Int64 = 0
        var fed: [Delivery] = []
        for _ in 0..<20 {
            let page = try await reader.deliveryFeed(after: cursor, limit: 50)
            fed += page.deliveries
            guard let through = page.through else { break }
            cursor = through
        }
        #expect(fed.map(\.notificationId) == ["n1", "n2"], "a run of bad rows longer than a page is read past")
    }

    /// The password can stay out of the URL, and so out of `ps`.
    @Test func thePasswordCanComeApartFromTheURL() throws {
        let url = "postgres://hub:inurl@127.0.0.1:5/db"
        #expect(try PostgresLocation(url, password: "fromfile").configuration.password == "fromfile")
        #expect(try PostgresLocation(url).configuration.password == "inurl")
    }
}
