import Foundation
import HubTestSupport
import LocalHub
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

/// Sends the hub acknowledged with 201.
actor AckLog {
    private(set) var entries: [(id: String, tag: String)] = []

    /// Records one; returns how many there are now.
    func acknowledge(id: String, tag: String) -> Int {
        entries.append((id, tag))
        return entries.count
    }
}

@Suite(.tags(.live), .fullSuiteOnly) struct CrashRecoveryTests {
    @Test func everyAcknowledgedSendSurvivesASIGKILL() async throws {
        let directory = TestHub.temporaryDirectory()
        let first = try await HubProcess.start(directory: directory)
        let devices = (world: randomDevice(), sports: randomDevice(), both: randomDevice())
        let listen = try HubClient(connectionString: first.listen, retryPolicy: .none)
        try await listen.createOrUpdateInstallation(newsInstallation("w", device: devices.world, tags: ["World"]))
        try await listen.createOrUpdateInstallation(newsInstallation("s", device: devices.sports, tags: ["Sports"]))
        try await listen.createOrUpdateInstallation(newsInstallation("b", device: devices.both, tags: ["World", "Sports"]))

        // A burst of sends; the hub is SIGKILLed once 150 have been acknowledged.
        let sender = try HubClient(connectionString: first.full, retryPolicy: .none)
        let log = AckLog()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<16 {
                group.addTask {
                    for i in 0..<40 {
                        let tag = (worker + i) % 2 == 0 ? "World" : "Sports"
                        guard
                            let receipt = try? await sender.send(
                                .template(["messageParam": "\(tag) \(worker)-\(i)"]), tagExpression: tag),
                            let id = receipt.notificationId
                        else { return }
                        if await log.acknowledge(id: id, tag: tag) == 150 { await first.kill() }
                    }
                }
            }
        }
        let acks = await log.entries
        #expect(acks.count >= 150)

        try await HubProcess.with(directory: directory) { second in
            let token = SharedAccessSignature.make(
                resource: second.listen.hubURL("news"), keyName: second.listen.keyName, key: second.listen.key)
            for (device, tags) in [
                (devices.world, ["World"]), (devices.sports, ["Sports"]), (devices.both, ["World", "Sports"]),
            ] {
                let expected = Set(acks.filter { tags.contains($0.tag) }.map(\.id))
                // Until every acknowledged send came: sends the hub made durable but whose
                // 201 the kill cut off may come too, in any place.
                let stream = try await readStream(
                    baseURL: second.state.url, hub: "news", device: device, token: token, timeout: 15,
                    awaiting: "the \(expected.count) acknowledged sends"
                ) { expected.isSubset(of: Set($0.map(\.notificationId))) }
                // A deduping reader, keyed by notification id and template, sees each exactly once.
                var seen = Set<String>()
                var deduped: [BuiltInPushDelivery] = []
                for delivery in stream where seen.insert(delivery.dedupeKey).inserted { deduped.append(delivery) }
                let delivered = Set(deduped.map(\.notificationId))
                #expect(expected.isSubset(of: delivered), "missing \(expected.subtracting(delivered).count) acknowledged sends")
                #expect(deduped.count == Set(deduped.map(\.notificationId)).count)
                #expect(deduped.allSatisfy { delivery in tags.contains(where: { delivery.alertText?.hasPrefix($0) == true }) })
            }
        }
    }
}
