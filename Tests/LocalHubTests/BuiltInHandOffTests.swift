import Foundation
import HubTestSupport
import NotificationHubs
import Testing

@testable import LocalHub

/// The built-in push service answers what the node's hand-off did with each delivery, send by
/// send, and never answers for a delivery nobody took.
@Suite struct BuiltInHandOffTests {
    /// A hand-off that takes the first delivery of each call and refuses the rest, noting what
    /// it was handed.
    final class TakingFirst: BuiltInPushHandOff, @unchecked Sendable {
        private let lock = NSLock()
        private var taken: [[Delivery]] = []
        var calls: [[Delivery]] { lock.withLock { taken } }

        func handOff(_ deliveries: [Delivery], to streams: DeviceStreams) async -> [PushOutcome] {
            lock.withLock { taken.append(deliveries) }
            return deliveries.indices.map { $0 == 0 ? .delivered : .refused(name: .pnsUnavailable, text: "not taken") }
        }
    }

    static func delivery(_ seq: Int64, device: String) -> Delivery {
        Delivery(
            seq: seq, hub: "news", device: device, notificationId: "n", template: "t", payload: #"{"aps":{"alert":"x"}}"#,
            delivered: Date(timeIntervalSince1970: 1_700_000_000), tags: nil)
    }

    static let notification = StoredNotification(
        hub: "news", id: "n", format: .template, tagExpression: nil, body: "{}", headers: [:], directHandle: nil,
        isTest: false, enqueued: Date())

    @Test func itAnswersWhatItsHandOffDidSendBySend() async {
        let handOff = TakingFirst()
        let service = BuiltInPushService(streams: DeviceStreams(), handOff: handOff)
        let first = [Self.delivery(1, device: "aa")]
        let second = [Self.delivery(2, device: "bb"), Self.delivery(3, device: "cc")]
        let outcomes = await service.push([
            PushSend(notification: Self.notification, deliveries: first),
            PushSend(notification: Self.notification, deliveries: second),
        ])
        let refused = PushOutcome.refused(name: .pnsUnavailable, text: "not taken")
        #expect(outcomes == [[.delivered], [refused, refused]])
        #expect(handOff.calls.map { $0.map(\.seq) } == [[1, 2, 3]], "every delivery is handed off, in order, at once")
    }

    @Test func aloneTheDeliveriesAreWithTheStreamsBeforeTheCommit() async throws {
        let streams = DeviceStreams()
        let node = SingleNode(store: MemoryHubStore(), streams: streams, logger: TestHub.quietLogger)
        let service = BuiltInPushService(streams: streams, handOff: node)
        let outcomes = await service.push([
            PushSend(notification: Self.notification, deliveries: [Self.delivery(7, device: "ab")])
        ])
        #expect(outcomes == [[.delivered]])
        // Not recorded yet: a stream that opens now still gets it.
        let opened = try streams.listen(hub: "news", device: "ab")
        #expect(opened.unrecorded.map(\.seq) == [7])
        streams.cancel(hub: "news", device: "ab", id: opened.id)
    }
}
