import Foundation
import HubTestSupport
import LocalHub
import NotificationHubs
import Synchronization
import TestTiers
import Testing

/// A shutdown ends within a bound whatever the store does: a dispatch whose record keeps
/// failing stops retrying when the hub stops, and the send goes out at the next start.
@Suite(.tags(.live, .postgres), .fullSuiteOnly) struct ShutdownTests {
    @Test func aHubWhoseRecordsKeepFailingStopsAndSendsAtItsNextStart() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let directory = TestHub.temporaryDirectory()
        let device = randomDevice()
        let hub = try await TestHub.start(directory: directory, configure: { $0.storeURL = url })
        var stopped = false
        do {
            try await hub.client(hub.listen).createOrUpdateInstallation(newsInstallation("s", device: device, tags: ["World"]))
            // Every dispatch's record fails, with an error a retry may mend (not a value out
            // of range): the dispatcher retries it until the hub stops.
            try await SharedHubStoreTests.refuseAtCommit(["INSERT ON delivery"], in: url)
            let receipt = try await hub.client(hub.full).send(.template(["messageParam": "held"]), tagExpression: "World")
            let id = try #require(receipt.notificationId)
            try await Task.sleep(for: .seconds(1))
            #expect(try await hub.client(hub.full).notificationDetails(id: id).state == .enqueued)
            // Not in a task group, which would wait for a stop that never ends.
            let ended = Mutex(false)
            Task {
                await hub.stop()
                ended.withLock { $0 = true }
            }
            let deadline = ContinuousClock.now + .seconds(60)
            while !ended.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
            #expect(ended.withLock { $0 }, "the hub was still stopping 60 s after it was asked")
            stopped = true
            _ = try await PostgresServer.shared().psql("DROP FUNCTION refuse() CASCADE;", database: url)
            try await TestHub.with(directory: directory, configure: { $0.storeURL = url }) { again in
                let token = again.token(again.listen)
                let got = try await readStream(
                    baseURL: again.baseURL, hub: "news", device: device, token: token, count: 1, timeout: 40)
                #expect(got.map(\.notificationId) == [id], "the send the stopped hub held went out at the next start")
            }
        } catch {
            if !stopped { await hub.stop() }
            throw error
        }
    }
}
