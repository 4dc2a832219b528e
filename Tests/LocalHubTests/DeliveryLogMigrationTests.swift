import Foundation
import GRDB
import HubTestSupport
import NotificationHubs
import Testing

@testable import LocalHub

/// An existing hub's delivery log (a whole payload per delivery) becomes the compact one on
/// first start, losing nothing (issue 30).
struct DeliveryLogMigrationTests {
    @Test func anOldDeliveryLogIsCopiedIntoTheCompactOne() async throws {
        let path = TestHub.temporaryDirectory().appendingPathComponent("hub.sqlite").path
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteHubStore.migrator.migrate(queue, upTo: "v8: claims by age")
            try await queue.write { db in
                for seq in 1...300 {
                    let notification = "n\((seq - 1) / 100)"
                    try db.execute(
                        sql: """
                            INSERT INTO delivery (seq, hub, device, notification_id, template, payload, delivered, tags)
                            VALUES (?, 'news', ?, ?, 'web', ?, ?, 'World')
                            """,
                        arguments: [
                            seq, String(format: "%064x", seq % 7), notification, #"{"aps":{"alert":"\#(notification)"}}"#,
                            1_800_000_000 + seq,
                        ])
                }
            }
            try await queue.close()
        }
        let store = try SQLiteHubStore(path: path)
        let device = String(format: "%064x", 3)
        let page = try await store.deliveries(hub: "news", device: device, after: 0, limit: 100)
        #expect(page.map(\.seq) == stride(from: 3, through: 300, by: 7).map(Int64.init))
        #expect(page.first?.payload == #"{"aps":{"alert":"n0"}}"# && page.first?.tags == "World")
        // A payload's deliveries share its time: the first one's.
        #expect(page.first?.delivered == Date(timeIntervalSince1970: 1_800_000_001))
        #expect(try await store.sequenceHighWater() == 300)
        let payloads = try await store.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM payload") }
        #expect(payloads == 3, "one payload per notification and template")
        #expect(try await store.usage().deliveries == 300)
    }

    /// How long the first start of a hub with a 1 GB old log takes (`BREAKING_NEWS_MIGRATION_GB=1`
    /// runs it; the changelog quotes it): a million deliveries of 1,000 bytes, 100 devices.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["BREAKING_NEWS_MIGRATION_GB"] == "1"))
    func aGigabyteOldLogIsMigratedOnFirstStart() async throws {
        let path = TestHub.temporaryDirectory().appendingPathComponent("hub.sqlite").path
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteHubStore.migrator.migrate(queue, upTo: "v8: claims by age")
            let alert = String(repeating: "x", count: 980)
            for batch in 0..<100 {
                try await queue.write { db in
                    let insert = try db.makeStatement(
                        sql: """
                            INSERT INTO delivery (seq, hub, device, notification_id, template, payload, delivered, tags)
                            VALUES (?, 'news', ?, ?, 't', ?, ?, 'World')
                            """)
                    for k in 0..<10_000 {
                        let seq = batch * 10_000 + k + 1
                        let notification = "n\((seq - 1) / 100)"
                        try insert.execute(arguments: [
                            seq, String(format: "%064x", seq % 100), notification,
                            #"{"aps":{"alert":"\#(alert)"}}"#, 1_800_000_000 + seq / 100,
                        ])
                    }
                }
            }
            try await queue.close()
        }
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
        let start = ContinuousClock.now
        let store = try SQLiteHubStore(path: path)
        let took = ContinuousClock.now - start
        print("migration: \(size >> 20) MB old log, first start took \(took)")
        #expect(try await store.usage().deliveries == 1_000_000)
    }

    /// A prune larger than one step (`SQLiteHubStore.pruneStep`) goes in several transactions
    /// and comes to the same as one: every delivery older than the horizon, each device's
    /// share as its gap, the newer kept.
    @Test func aPruneLargerThanOneStepRemovesAllItShouldAndNotesEveryGap() async throws {
        let path = TestHub.temporaryDirectory().appendingPathComponent("hub.sqlite").path
        let store = try SQLiteHubStore(path: path)
        let devices = (0..<20_000).map { String(format: "%064x", $0) }
        var seq: Int64 = 0
        for (n, offset) in [("a", 1.0), ("b", 2), ("c", 3), ("d", 4), ("new", 100)] {
            var notification = HubStoreConformanceTests.notification(n)
            try await store.apply([.insertNotification(notification)])
            notification.state = .completed
            notification.ended = HubStoreConformanceTests.t0.addingTimeInterval(offset)
            let deliveries = devices.map { device -> Delivery in
                seq += 1
                return Delivery(
                    seq: seq, hub: "news", device: device, notificationId: n, template: "t",
                    payload: #"{"aps":{"alert":"\#(n)"}}"#, delivered: HubStoreConformanceTests.t0.addingTimeInterval(offset),
                    tags: nil)
            }
            _ = try await store.record([DispatchRecord(notification: notification, deliveries: deliveries)])
        }
        #expect(Int64(devices.count * 4) > SQLiteHubStore.pruneStep, "more than one step")
        let report = try await store.prune(before: HubStoreConformanceTests.t0.addingTimeInterval(50), maximumLogBytes: 1 << 30)
        #expect(report.deliveries == 80_000 && report.payloads == 4 && report.notifications == 4)
        #expect(try await store.usage().deliveries == 20_000)
        for k in [0, 12_345, 19_999] {
            #expect(
                try await store.gap(hub: "news", device: devices[k])
                    == DeliveryGap(from: Int64(k + 1), through: Int64(60_000 + k + 1), count: 4))
            #expect(
                try await store.deliveries(hub: "news", device: devices[k], after: 0, limit: 10).map(\.notificationId) == ["new"])
        }
    }

    /// A log row changed by hand is checked before a stream carries it: a payload with a line
    /// break (frames of its own in a stream), one that is not JSON, or a field of the wrong type
    /// is skipped, and the store does not stop on it.
    @Test func aLogRowChangedByHandIsSkipped() async throws {
        let path = TestHub.temporaryDirectory().appendingPathComponent("hub.sqlite").path
        let store = try SQLiteHubStore(path: path)
        let device = String(format: "%064x", 1)
        try await store.apply([.insertNotification(HubStoreConformanceTests.notification("n1"))])
        var done = HubStoreConformanceTests.notification("n1")
        done.state = .completed
        let deliveries = ["a", "b", "c", "d"].enumerated().map { n, template in
            Delivery(
                seq: Int64(n + 1), hub: "news", device: device, notificationId: "n1", template: template,
                payload: #"{"aps":{"alert":"x"}}"#, delivered: Date(), tags: nil)
        }
        _ = try await store.record([DispatchRecord(notification: done, deliveries: deliveries)])
        try await store.pool.write { db in
            try db.execute(sql: #"UPDATE payload SET body = '{"aps":{"alert":"x"}}' || char(10) || 'id: 9' WHERE template = 'a'"#)
            try db.execute(sql: "UPDATE payload SET body = 'not json' WHERE template = 'b'")
            try db.execute(sql: "UPDATE payload SET delivered = 'soon' WHERE template = 'c'")
        }
        let page = try await store.deliveries(hub: "news", device: device, after: 0, limit: 100)
        #expect(page.map(\.template) == ["d"], "\(page.map(\.payload))")
    }
}
