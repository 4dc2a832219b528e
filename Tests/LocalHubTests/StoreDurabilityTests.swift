import Foundation
import GRDB
import HubTestSupport
import Testing

@testable import LocalHub

/// The SQLite store syncs every commit before a write is answered.
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
}
