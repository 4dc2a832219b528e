import Foundation
import GRDB
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// The counters every store keeps, typed (the delivery log's epoch and reservation; on
/// PostgreSQL also the change log's last number and the point it was pruned through): they
/// survive a reopen, never go back, and a database of the key/value layout (`meta`) keeps
/// their values when it is migrated.
extension HubStoreConformanceTests {
    @Test(arguments: Kind.inThisTier)
    func theCountersSurviveAReopenAndNeverGoBack(kind: Kind) async throws {
        let (store, reopen) = try await kind.make()
        let epoch = try await store.epoch()
        try await store.reserveSequence(through: 300)
        let changes = try await store.apply([
            .upsertInstallation(hub: "news", try Self.installation("a")),
            .upsertInstallation(hub: "news", try Self.installation("b")),
        ])
        #expect(changes == (kind == .postgres ? 1...2 : nil), "only a shared store numbers its changes")
        let reopened = try await reopen()
        #expect(try await reopened.epoch() == epoch)
        #expect(try await reopened.sequenceHighWater() == 300)
        try await reopened.reserveSequence(through: 200)
        #expect(try await reopened.sequenceHighWater() == 300, "a reservation is never lowered")
        let next = try await reopened.apply([.upsertInstallation(hub: "news", try Self.installation("c"))])
        #expect(next == (kind == .postgres ? 3...3 : nil), "the change log numbers on after a reopen")
        #expect(try await reopen().epoch() == epoch)
    }

    @Test func aSQLiteDatabaseOfTheKeyValueLayoutKeepsItsCounters() async throws {
        let path = TestHub.temporaryDirectory().appendingPathComponent("hub.sqlite").path
        let epoch = HubEpoch.make()
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteHubStore.migrator.migrate(queue, upTo: "v11: claim secrets")
            try await queue.write { db in
                try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'epoch'", arguments: [epoch])
                try db.execute(sql: "UPDATE meta SET value = '4321' WHERE key = 'seq_reserved'")
            }
            try await queue.close()
        }
        let store = try SQLiteHubStore(path: path)
        #expect(try await store.epoch() == epoch)
        #expect(try await store.sequenceHighWater() == 4321)
        try await store.reserveSequence(through: 4000)
        #expect(try await store.sequenceHighWater() == 4321)
        let left = try await store.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM meta") }
        #expect(left == 0, "the counters left meta")
        try store.close()
        let reopened = try SQLiteHubStore(path: path)
        #expect(try await reopened.epoch() == epoch)
        #expect(try await reopened.sequenceHighWater() == 4321)
    }

    @Test(.fullSuiteOnly) func aPostgresDatabaseOfTheKeyValueLayoutKeepsItsCounters() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let epoch = HubEpoch.make()
        do {
            let store = try await PostgresHubStore.started(url: url, logger: TestHub.quietLogger)
            _ = try await store.apply(try (1...3).map { .upsertInstallation(hub: "news", try Self.installation("i\($0)")) })
            store.shutdown()
        }
        // The layout before v13: the counters as text in `meta`.
        _ = try await PostgresServer.shared().psql(
            """
            DROP TABLE change_counter; DROP TABLE delivery_counter; DELETE FROM migration WHERE name LIKE 'v13:%';
            INSERT INTO meta (key, value) VALUES ('epoch', '\(epoch)'), ('change_seq', '7'), ('change_pruned', '2'),
                ('seq_reserved', '900'), ('delivery_high', '1200');
            """, database: url)
        let store = try await PostgresHubStore.started(url: url, logger: TestHub.quietLogger)
        defer { store.shutdown() }
        #expect(try await store.epoch() == epoch)
        #expect(try await store.sequenceHighWater() == 1200)
        #expect(try await store.apply([.upsertInstallation(hub: "news", try Self.installation("i4"))]) == 8...8)
        await #expect(throws: ChangeLogPruned.self) { try await store.changes(after: 1, limit: 10) }
        #expect(try await store.changes(after: 2, limit: 10).map(\.seq) == [3, 8])
        let left = try await PostgresServer.shared().psql("SELECT count(*) FROM meta WHERE key <> 'keys'", database: url)
        #expect(left.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "the counters left meta")
    }

    /// The routines that refuse sequential reads read the counters' single rows, which have no
    /// index path: the refused read's cost passed every JIT threshold, and each call compiled
    /// its statements (found as a fivefold slower fan-out on PostgreSQL). auto_explain prints
    /// each nested statement's plan, with a "JIT:" section when it was compiled.
    @Test(.fullSuiteOnly) func theRoutinesThatReadByIndexOnlyCompileNothing() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let store = try await PostgresHubStore.started(url: url, logger: TestHub.quietLogger)
        defer { store.shutdown() }
        let settings = try await PostgresServer.shared().psql(
            "SELECT proname || ' ' || array_to_string(proconfig, ',') FROM pg_proc WHERE 'enable_seqscan=off' = ANY(proconfig)",
            database: url
        ).split(separator: "\n").map(String.init).sorted()
        #expect(settings.map { $0.split(separator: " ").first.map(String.init) } == ["changed_since", "record_dispatches"])
        for routine in settings { #expect(routine.contains("jit=off"), "\(routine)") }
        let plans = try await PostgresServer.shared().psql(
            """
            LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;
            SET auto_explain.log_level = notice; SET client_min_messages = notice; SET jit_above_cost = 100000;
            SELECT changed_since(0, 10, '{i}', '{news}', '{a}', '{true}');
            """, database: url)
        #expect(plans.contains("change_counter"), "the plans were printed: \(plans)")
        #expect(!plans.contains("JIT:"), "\(plans)")
    }
}
