import Foundation
import HubTestSupport
import NotificationHubs
import Testing

@testable import LocalHub

/// A push service that answers only when let go: an external service that stalls.
final class StallingPushService: PushService, @unchecked Sendable {
    let kind = PushServiceKind.fcmV1
    let platform = Platform.fcmV1
    private let gate = AsyncStream<Void>.makeStream()
    var keepsDeliveryLog: Bool { false }
    func serves(hub: String) -> Bool { true }
    func check(_ payload: [UInt8]) -> PushOutcome? { nil }

    func push(_ sends: [PushSend]) async -> [[PushOutcome]] {
        for await _ in gate.stream {}
        return sends.map { Array(repeating: .delivered, count: $0.deliveries.count) }
    }

    func letGo() { gate.continuation.finish() }
}

/// The terminals' news never waits for an external service (16 batches waiting on a service
/// that asks to wait a minute once held a terminal's news back until they were done).
struct StalledServiceTests {
    @Test func aStalledExternalServiceNeverHoldsBackATerminal() async throws {
        let stalled = StallingPushService()
        let engine = HubEngine(store: MemoryHubStore(), configuration: .init(hubs: ["news"]), pushServices: [stalled])
        try await engine.start()
        let running = Task { await engine.run() }
        defer {
            stalled.letGo()
            running.cancel()
        }
        let phone = try Installation(
            installationId: "phone", platform: .fcmV1, pushChannel: "Phone-Handle", tags: ["World"],
            templates: ["t": InstallationTemplate(body: #"{"data":{"message":"$(messageParam)"}}"#)]
        ).validatedForStorage(lastUpdate: "x")
        _ = try await engine.write(.putInstallation(hub: "news", phone))
        let terminal = try newsInstallation("terminal", device: "ab12", tags: ["Sports"]).validatedForStorage(lastUpdate: "x")
        _ = try await engine.write(.putInstallation(hub: "news", terminal))
        // More batches waiting on the stalled service than may wait at once.
        for i in 0..<(HubDispatcher.externalLimit * 2) {
            try await engine.enqueue(
                StoredNotification(
                    hub: "news", id: engine.makeNotificationId(), format: .template, tagExpression: "World",
                    body: #"{"messageParam":"stalled \#(i)"}"#))
            // One batch each: sent apart.
            try await Task.sleep(for: .milliseconds(5))
        }
        let (_, events, _) = try engine.streams.listen(hub: "news", device: "ab12")
        try await engine.enqueue(
            StoredNotification(
                hub: "news", id: engine.makeNotificationId(), format: .template, tagExpression: "Sports",
                body: #"{"messageParam":"for the terminal"}"#))
        let arrived = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await event in events {
                    if case .delivery(let delivery) = event, delivery.payload.contains("for the terminal") { return true }
                }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(arrived, "the terminal's news waited for the stalled service")
    }
}
