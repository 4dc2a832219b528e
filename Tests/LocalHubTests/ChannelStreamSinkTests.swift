import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import NotificationHubs
import Testing

@testable import LocalHub

/// The sink that writes a device stream's frames straight into its channel, on a testing
/// channel whose writability and event loop the test drives.
@Suite struct ChannelStreamSinkTests {
    static func delivery(_ seq: Int64) -> Delivery {
        Delivery(
            seq: seq, hub: "news", device: "ab", notificationId: "n\(seq)", template: "t", payload: #"{"aps":{"alert":"x"}}"#,
            delivered: Date(timeIntervalSince1970: 1_700_000_000), tags: nil)
    }

    /// A sink on a testing channel, past its backlog: writing each event as it comes.
    static func liveSink(limit: Int) async -> (NIOAsyncTestingChannel, NIOAsyncTestingEventLoop, ChannelStreamSink) {
        let channel = NIOAsyncTestingChannel()
        let loop = channel.testingEventLoop
        let sink = ChannelStreamSink(channel: channel, epoch: "e", limit: limit)
        async let live: Void = sink.goLive(after: 0, pending: [])
        await loop.run()
        await live
        return (channel, loop, sink)
    }

    /// What a `DeviceStreams` job does for one event.
    static func hand(_ event: StreamEvent, to sink: ChannelStreamSink, on loop: NIOAsyncTestingEventLoop) {
        loop.execute {
            var shapes = FrameShapes()
            sink.receive(event, shapes: &shapes)
            sink.flush()
        }
    }

    /// The frames the channel was handed, in order.
    static func written(_ channel: NIOAsyncTestingChannel) async throws -> [String] {
        var frames: [String] = []
        while let part = try await channel.readOutbound(as: HTTPResponsePart.self) {
            if case .body(let buffer) = part { frames.append(String(buffer: buffer)) }
        }
        return frames
    }

    @Test func eventsHeldBeforeGoingLiveFollowTheBacklogOnceInOrder() async throws {
        let channel = NIOAsyncTestingChannel()
        let loop = channel.testingEventLoop
        let sink = ChannelStreamSink(channel: channel, epoch: "e", limit: 100)
        // Published while the backlog was read: 3 (also in the backlog), 5, 4.
        for seq in [3, 5, 4] as [Int64] { Self.hand(.delivery(Self.delivery(seq)), to: sink, on: loop) }
        await loop.run()
        #expect(try await Self.written(channel).isEmpty)
        // The backlog ended at 3; 6 was published before its commit.
        async let live: Void = sink.goLive(after: 3, pending: [Self.delivery(6), Self.delivery(5)])
        await loop.run()
        await live
        Self.hand(.delivery(Self.delivery(6)), to: sink, on: loop)
        Self.hand(.delivery(Self.delivery(7)), to: sink, on: loop)
        await loop.run()
        let frames = try await Self.written(channel)
        #expect(frames == [4, 5, 6, 7].map { Self.delivery($0).serverSentEvent(epoch: "e") })
    }

    @Test func aClientThatStopsReadingIsEndedAfterTheLimit() async throws {
        let (channel, loop, sink) = await Self.liveSink(limit: 5)
        channel.isWritable = false
        for seq in 1...20 as ClosedRange<Int64> { Self.hand(.delivery(Self.delivery(seq)), to: sink, on: loop) }
        await loop.run()
        async let ended: Void = sink.waitUntilEnded()
        await loop.run()
        await ended
        // Five frames waited for the client; the sixth ended the stream instead of growing it.
        #expect(try await Self.written(channel).count == 5)
    }

    @Test func nothingIsWrittenOnceClosed() async throws {
        let (channel, loop, sink) = await Self.liveSink(limit: 5)
        async let closed: Void = sink.close()
        await loop.run()
        await closed
        Self.hand(.delivery(Self.delivery(1)), to: sink, on: loop)
        Self.hand(.keepAlive, to: sink, on: loop)
        await loop.run()
        #expect(try await Self.written(channel).isEmpty)
    }

    @Test func aClosedConnectionEndsTheWait() async throws {
        let channel = NIOAsyncTestingChannel()
        let loop = channel.testingEventLoop
        let sink = ChannelStreamSink(channel: channel, epoch: "e", limit: 5)
        try await channel.close()
        async let ended: Void = sink.waitUntilEnded()
        await loop.run()
        await ended
    }

    /// Review finding: the built-in push service waited for every loop's writes before the dispatcher could
    /// record, so one stream on a loop that does not run its jobs (stuck, or here a testing
    /// loop nobody runs) stopped every later dispatch. The wait is bounded now.
    @Test(.timeLimit(.minutes(1)))
    func aLoopThatDoesNotRunDoesNotStallTheDispatcher() async throws {
        let stuck = NIOAsyncTestingEventLoop()
        let streams = DeviceStreams()
        _ = try streams.listen(hub: "news", device: "ab", sink: BufferedStreamSink(eventLoop: stuck))
        let service = BuiltInPushService(streams: streams)
        let notification = StoredNotification(
            hub: "news", id: "n", format: .template, tagExpression: nil, body: "{}", headers: [:], directHandle: nil,
            isTest: false, enqueued: Date())
        let outcomes = await service.push([PushSend(notification: notification, deliveries: [Self.delivery(1)])])
        #expect(outcomes == [[.delivered]])
        await stuck.run()
        try await stuck.shutdownGracefully()
    }
}
