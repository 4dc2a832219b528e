import NotificationHubs
import Testing

@testable import LocalHub

/// Writes no one waits for (a claim renewed, a channel gone) go through the write queue, in
/// turn with the others, rather than in a task of their own.
@Suite struct WriteQueueTests {
    static let gone = ChannelGone(hub: "news", device: "b", platform: .apns, reason: "ExpiredChannel")

    @Test func aPostedWriteIsQueuedAtOnceInItsTurnWithNoOneWaiting() {
        let writes = WriteQueue()
        writes.post(.renewClaim(hub: "news", device: "a"))
        writes.post(.channelGone(Self.gone))
        let taken = writes.queue.take(limit: 10)
        #expect(taken.count == 2)
        #expect(taken.allSatisfy { $0.continuation == nil })
        guard case .renewClaim(_, let device) = taken.first?.request else {
            Issue.record("the first write taken is not the claim renewed first")
            return
        }
        #expect(device == "a")
        guard case .channelGone(let channel) = taken.last?.request else {
            Issue.record("the second write taken is not the channel gone")
            return
        }
        #expect(channel == Self.gone)
    }

    @Test func aWritePostedOnceTheQueueClosedIsDropped() {
        let writes = WriteQueue()
        writes.close()
        writes.post(.channelGone(Self.gone))
        #expect(writes.queue.take(limit: 10).isEmpty)
    }
}
