import Foundation
import GRDB
import HubTestSupport
import Testing

@testable import LocalHub

/// The SQLite store syncs every commit that answers a writer before it is answered.
@Suite struct StoreDurabilityTests {
    /// GRDB's WAL set-up, which runs after `prepareDatabase`, sets `synchronous = NORMAL`
    /// (commits not synced); the store sets FULL again on its writer.
    @Test func theWriterSyncsEveryCommit() async throws {
        let path = TestHub.temporaryDirectory().appendingPathComponent("hub.sqlite").path
        let store = try SQLiteHubStore(path: path)
        let level = try await store.pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        // 2 is FULL; NORMAL is 1.
        #expect(level == 2)
    }

    /// The dispatcher's record alone commits at NORMAL (a lost record is dispatched again);
    /// the writer is back at FULL after it, for the writes that answer senders.
    @Test func aDispatchRecordLeavesTheWriterSyncing() async throws {
        let path = TestHub.temporaryDirectory().appendingPathComponent("hub.sqlite").path
        let store = try SQLiteHubStore(path: path)
        var notification = StoredNotification(hub: "news", id: "n1", format: .template, tagExpression: nil, body: "{}")
        try await store.apply([.insertNotification(notification)])
        notification.state = .completed
        let delivery = Delivery(
            seq: 1, hub: "news", device: "ab", notificationId: "n1", template: "", payload: "{}", delivered: Date(), tags: nil)
        #expect(try await store.record([DispatchRecord(notification: notification, deliveries: [delivery])]) == [delivery])
        let level = try await store.pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(level == 2)
        #expect(try await store.notification(hub: "news", id: "n1")?.state == .completed)
    }
}
