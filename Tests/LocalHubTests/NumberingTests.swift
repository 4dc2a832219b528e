import AsyncHTTPClient
import Foundation
import HubTestSupport
import LocalHub
import NotificationHubs
import TestTiers
import Testing

/// Delivery numbers never go back, on every store, through an empty log and at the edge of
/// their range; a device that resumes past every number given reads the log again.
@Suite struct NumberingTests {
    /// A device that resumes past every number the log has given (its terminal read them in
    /// a log numbered again from below, as a PostgreSQL hub of an earlier version did once
    /// retention emptied its log) reads the whole log again, as in a new epoch, and dedupes;
    /// one that resumes at the last number given reads nothing more.
    @Test func aResumePointPastEveryNumberGivenReadsTheLogAgain() async throws {
        try await RouterHub.with { hub in
            let device = randomDevice()
            try await hub.put(newsInstallation("n", device: device, tags: ["World"]))
            for text in ["one", "two"] {
                let sent = try await hub.raw(
                    .POST, "\(hub.baseURL)/news/messages?api-version=2020-06",
                    headers: [
                        ("Authorization", hub.token(hub.full)), ("ServiceBusNotification-Format", "template"),
                        ("ServiceBusNotification-Tags", "World"), ("Content-Type", "application/json"),
                    ], body: #"{"messageParam":"\#(text)"}"#)
                #expect(sent.status == 201)
            }
            func inbox(since: Int64) async throws -> (seqs: [Int64], next: JSONValue?) {
                let answer = try await hub.raw(
                    .GET,
                    hub.baseURL + BuiltInPushDelivery.path(hub: "news", device: device, resource: "inbox")
                        + "?since=\(since)&\(BuiltInPushDelivery.epochParameter)=\(hub.engine.epoch)",
                    headers: [("Authorization", hub.token(hub.listen))])
                let page = try JSONValue(parsing: answer.body)
                let seqs = (page["deliveries"]?.arrayValue ?? []).compactMap { try? BuiltInPushDelivery(json: $0).seq }
                return (seqs, page["next"])
            }
            let all = try await eventually("two deliveries in the inbox") { () async throws -> [Int64]? in
                let seqs = try await inbox(since: 0).seqs
                return seqs.count == 2 ? seqs : nil
            }
            #expect(try await inbox(since: all[1]).seqs.isEmpty, "nothing after the last number given")
            #expect(try await inbox(since: all[1] + 1_000).seqs == all, "past every number given: the whole log again")
        }
    }

    /// The mark is checked against the rows and the gaps at every start: one whose row is gone
    /// (deleted by hand) is made again, and numbering goes on above the log that retention
    /// emptied (the gaps remember what it held).
    @Test(.tags(.live, .postgres), .fullSuiteOnly) func aNodeMakesAMarkThatIsGoneAgainAtItsStart() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let store = try await PostgresHubStore.started(url: url, logger: TestHub.quietLogger)
        try await store.apply([.insertNotification(HubStoreConformanceTests.notification("n1"))])
        var done = HubStoreConformanceTests.notification("n1")
        done.state = .completed
        done.ended = HubStoreConformanceTests.t0
        let first = try await store.record([
            DispatchRecord(notification: done, deliveries: (0..<3).map { _ in HubStoreConformanceTests.delivery(0) })
        ]).map(\.seq)
        _ = try await store.prune(before: HubStoreConformanceTests.t0, maximumLogBytes: 1)
        _ = try await PostgresServer.shared().psql("DELETE FROM delivery_counter", database: url)
        store.shutdown()
        let restarted = try await PostgresHubStore.started(url: url, logger: TestHub.quietLogger)
        defer { restarted.shutdown() }
        try await restarted.apply([.insertNotification(HubStoreConformanceTests.notification("n2"))])
        let next = try await restarted.record([
            DispatchRecord(notification: done, deliveries: [HubStoreConformanceTests.delivery(0, notification: "n2")])
        ]).map(\.seq)
        let last = try #require(first.max())
        #expect(next.count == 1 && next[0] > last, "\(next) after \(first)")
    }

    /// The bug this guards against, end to end on one node of PostgreSQL: retention empties
    /// the log during a quiet spell, then news comes. A stream open through it, and a stream
    /// that resumes after its last number, both get every send (earlier, the log was
    /// numbered again from 1 and both got nothing).
    @Test(.tags(.live, .postgres), .fullSuiteOnly) func aNodeOnPostgresDeliversAfterRetentionEmptiedItsLog() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        try await TestHub.with(configure: { $0.storeURL = url }) { hub in
            let device = randomDevice()
            try await hub.client(hub.listen).createOrUpdateInstallation(newsInstallation("q", device: device, tags: ["World"]))
            for i in 1...3 { _ = try await RealDeliveryTests.send(hub, "before \(i)") }
            let token = hub.token(hub.listen)
            let before = try await readStream(baseURL: hub.baseURL, hub: "news", device: device, token: token, count: 3)
            let last = try #require(before.map(\.seq).max())
            // A quiet spell past the horizon: retention, beside the node, removes everything.
            let beside = try await PostgresHubStore.started(url: url, logger: TestHub.quietLogger)
            defer { beside.shutdown() }
            _ = try await beside.prune(before: Date().addingTimeInterval(86_400), maximumLogBytes: 1 << 30)
            #expect(try await beside.usage().deliveries == 0)
            async let live = readStream(
                baseURL: hub.baseURL, hub: "news", device: device, token: token, lastEventId: last, count: 2, timeout: 30)
            // The live stream is open (its backlog, empty, read) before the sends.
            try await Task.sleep(for: .milliseconds(300))
            for i in 1...2 { _ = try await RealDeliveryTests.send(hub, "after \(i)") }
            let heard = try await live
            #expect(heard.compactMap(\.alertText) == ["after 1", "after 2"])
            #expect(heard.allSatisfy { $0.seq > last }, "numbered after \(last): \(heard.map(\.seq))")
            let resumed = try await readStream(
                baseURL: hub.baseURL, hub: "news", device: device, token: token, lastEventId: last, count: 2)
            #expect(resumed.compactMap(\.alertText) == ["after 1", "after 2"])
        }
    }
}
