import Foundation
import HubTestSupport
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// The delivery log on PostgreSQL in the compact form (`compactLog`): a payload once per send
/// and template, and a database of v14 (a whole payload in every row) read as it was while
/// its rows are copied into the compact form, in batches, with nothing lost or repeated.
extension HubStoreConformanceTests {
    @Test(.fullSuiteOnly) func aPostgresLogKeepsOnePayloadPerSendAndTemplate() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let store = try await PostgresHubStore.started(url: url, logger: TestHub.quietLogger)
        defer { store.shutdown() }
        let devices = (0..<100).map { String(format: "%064x", $0) }
        var sent = Self.notification("n1")
        sent.state = .completed
        let deliveries = devices.map { device in
            Delivery(
                seq: 0, hub: "news", device: device, notificationId: "n1", template: "t",
                payload: #"{"aps":{"alert":"one"}}"#, delivered: Self.t0, tags: "World")
        }
        _ = try await store.apply([.insertNotification(sent)])
        let written = try await store.record([DispatchRecord(notification: sent, deliveries: deliveries)])
        #expect(written.map(\.seq) == Array(1...100))
        let counts = try await PostgresServer.shared().psql(
            "SELECT (SELECT COUNT(*) FROM payload) || ' ' || (SELECT COUNT(*) FROM delivery)", database: url)
        #expect(counts.trimmingCharacters(in: .whitespacesAndNewlines) == "1 100")
        // The same dispatch repeated (another node took it over): nothing is written twice.
        #expect(try await store.record([DispatchRecord(notification: sent, deliveries: deliveries)]).isEmpty)
        let usage = try await store.usage()
        #expect(usage.deliveries == 100)
        #expect(usage.deliveryLogBytes == Int64(#"{"aps":{"alert":"one"}}"#.utf8.count) + 100 * deliveryRowBytes)
        #expect(try await store.deliveries(hub: "news", device: devices[7], after: 0, limit: 10).map(\.seq) == [8])
    }

    @Test(.fullSuiteOnly) func aPostgresLogOfVersion14IsReadWhileItIsCopiedIntoTheCompactForm() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        do {
            let store = try await PostgresHubStore.started(url: url, logger: TestHub.quietLogger)
            store.shutdown()
        }
        // The layout of v14: deliveries with their payloads in `delivery`, 30 of them, over
        // three devices and two notifications (one payload each, device c's its own).
        var rows: [String] = []
        for seq in 1...30 {
            let device = ["a", "b", "c"][seq % 3]
            let notification = seq <= 15 ? "n1" : "n2"
            let body = device == "c" ? #"{"aps":{"alert":"c \#(notification)"}}"# : #"{"aps":{"alert":"\#(notification)"}}"#
            rows.append(
                "(\(seq), 'news', '\(device)', '\(notification)', 't', '\(body)', \(Self.t0.timeIntervalSince1970 + Double(seq)), 'World')"
            )
        }
        _ = try await PostgresServer.shared().psql(
            """
            DROP TABLE delivery, payload, device_ref; ALTER TABLE delivery_v1 RENAME TO delivery;
            ALTER INDEX delivery_v1_pkey RENAME TO delivery_pkey; ALTER INDEX delivery_v1_device RENAME TO delivery_device;
            ALTER INDEX delivery_v1_notification RENAME TO delivery_notification;
            DELETE FROM migration WHERE name LIKE 'v15:%';
            INSERT INTO delivery (seq, hub, device, notification_id, template, payload, delivered, tags) VALUES
            \(rows.joined(separator: ",\n"));
            """, database: url)
        let store = try await PostgresHubStore.started(url: url, logger: TestHub.quietLogger)
        defer { store.shutdown() }
        func everything() async throws -> [Delivery] {
            var all: [Delivery] = []
            for device in ["a", "b", "c"] {
                all += try await store.deliveries(hub: "news", device: device, after: 0, limit: 100)
            }
            return all.sorted { $0.seq < $1.seq }
        }
        let before = try await everything()
        #expect(before.map(\.seq) == Array(1...30), "the earlier form is read until it is copied")
        #expect(before.first { $0.seq == 3 }?.payload == #"{"aps":{"alert":"n1"}}"#)
        #expect(try await store.deliveryFeed(after: 10, limit: 5).deliveries.map(\.seq) == Array(11...15))
        #expect(try await store.sequenceHighWater() == 30)

        // A dispatch after the upgrade: numbered after the earlier rows, and one repeated to a
        // device that has it in the earlier form is left out.
        var n3 = Self.notification("n3")
        n3.state = .completed
        let fresh = Delivery(
            seq: 0, hub: "news", device: "a", notificationId: "n3", template: "t", payload: #"{"aps":{"alert":"n3"}}"#,
            delivered: Self.t0,
            tags: nil)
        let repeated = Delivery(
            seq: 0, hub: "news", device: "a", notificationId: "n2", template: "t", payload: #"{"aps":{"alert":"n3"}}"#,
            delivered: Self.t0,
            tags: nil)
        _ = try await store.apply([.insertNotification(n3)])
        let written = try await store.record([DispatchRecord(notification: n3, deliveries: [fresh, repeated])])
        #expect(written.map(\.seq) == [31])

        // Copied a batch at a time, the oldest first, while reads go on.
        var batches = 0
        while try await store.copyEarlierDeliveries(limit: 7) > 0 {
            batches += 1
            let read = try await everything().map(\.seq)
            #expect(read == Array(1...31), "every row readable mid-copy: \(read)")
        }
        #expect(batches == 5)
        let left = try await PostgresServer.shared().psql(
            "SELECT (SELECT COUNT(*) FROM delivery_v1) || ' ' || (SELECT COUNT(*) FROM delivery)", database: url)
        #expect(left.trimmingCharacters(in: .whitespacesAndNewlines) == "0 31")
        let after = try await everything()
        #expect(Array(after.prefix(30)) == before, "every delivery as it was: number, device, payload, time, tags")
        #expect(try await store.devices(hub: "news").map(\.count) == [11, 10, 10])

        // Retention cuts both forms the same way: device a's gap counts what it lost.
        let report = try await store.prune(before: Self.t0.addingTimeInterval(20.5), maximumLogBytes: .max)
        #expect(report.deliveries == 20)
        let gap = try #require(try await store.gap(hub: "news", device: "a"))
        #expect(gap.from == 3 && gap.through == 18 && gap.count == 6)
        let kept = try await store.deliveries(hub: "news", device: "a", after: 0, limit: 100).map(\.seq)
        #expect(kept == [21, 24, 27, 30, 31], "\(kept)")
        #expect(try await store.sequenceHighWater() == 32, "the repeat's number (32) is left unused, never given again")
        // Every delivery gone: no device keeps its reference, and the next dispatch makes one.
        #expect(try await store.prune(before: Self.t0.addingTimeInterval(1_000), maximumLogBytes: .max).deliveries == 11)
        let refs = try await PostgresServer.shared().psql(
            "SELECT (SELECT COUNT(*) FROM device_ref) || ' ' || (SELECT COUNT(*) FROM payload)", database: url)
        #expect(refs.trimmingCharacters(in: .whitespacesAndNewlines) == "0 0", "no device reference, no payload left")
        var n4 = Self.notification("n4")
        n4.state = .completed
        _ = try await store.apply([.insertNotification(n4)])
        var next = fresh
        next.notificationId = "n4"
        #expect(try await store.record([DispatchRecord(notification: n4, deliveries: [next])]).map(\.seq) == [33])
        #expect(try await store.deliveries(hub: "news", device: "a", after: 0, limit: 10).map(\.seq) == [33])
    }
}
