import AsyncHTTPClient
import Foundation
import HubTestSupport
import NIOCore
import NotificationHubs
import Synchronization
import TestTiers
import Testing

@testable import LocalHub

/// Retention holding while work keeps arriving (issue 30): a hub keeping 30 s, waves of sends
/// to 100 streams for three minutes, one device away for most of it.
@Suite(
    .tags(.live, .soak), .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BREAKING_NEWS_SOAK"] == "1", "make soak runs it"))
struct SoakTests {
    static let horizon: TimeInterval = 30
    static let duration: TimeInterval = 180
    static let devices = 100

    /// The database stops growing once the horizon is reached (the last wave within 20 % of
    /// the size after the first fifth); every online device got every send exactly once; the
    /// device that stayed away past the horizon is told what it lost, and counts add up.
    @Test func retentionHoldsTheDatabaseWhileSendsKeepComing() async throws {
        let policy = RetentionPolicy(age: Self.horizon, maximumLogBytes: 1 << 30, installationTTL: nil)
        try await TestHub.with(configure: { $0.retention = policy }) { hub in
            let listen = try hub.client(hub.listen)
            let online = (0..<Self.devices).map { _ in randomDevice() }
            let away = randomDevice()
            for (i, device) in (online + [away]).enumerated() {
                try await listen.createOrUpdateInstallation(newsInstallation("soak\(i)", device: device, tags: ["World"]))
            }
            let store = try SQLiteHubStore(path: hub.directory.appendingPathComponent("hub.sqlite").path)
            let received = Received()
            // The streams' own connections, apart from the sender's pool.
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = Self.devices + 8
            let streams = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            var failure: (any Error)?
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for device in online {
                        group.addTask { try await Self.follow(hub, device: device, into: received, client: streams) }
                    }
                    let sender = try hub.client(hub.full)
                    let start = ContinuousClock.now
                    var sent: [String] = []
                    var sizeAtFifth: Int64?
                    var lastSize: Int64 = 0
                    let text = String(repeating: "Breaking: a long enough headline. ", count: 3)
                    while ContinuousClock.now - start < .seconds(Self.duration) {
                        let wave = ContinuousClock.now
                        for _ in 0..<2 {
                            let receipt = try await sender.send(.template(["messageParam": text]), tagExpression: "World")
                            sent.append(try #require(receipt.notificationId))
                        }
                        lastSize = try await store.usage().usedBytes
                        if sizeAtFifth == nil, ContinuousClock.now - start >= .seconds(Self.duration / 5) {
                            sizeAtFifth = lastSize
                        }
                        try await Task.sleep(until: wave + .seconds(1))
                    }
                    // Every online device gets the last sends, then stops.
                    try await eventually("every online device to have the \(sent.count) sends", every: .milliseconds(100)) {
                        received.everyone(of: online, has: sent.count)
                    }
                    received.finish()
                    group.cancelAll()

                    let fifth = try #require(sizeAtFifth)
                    print(
                        "soak: \(sent.count) sends to \(Self.devices) streams; used \(fifth) bytes after a fifth, \(lastSize) at the end"
                    )
                    #expect(Double(lastSize) <= Double(fifth) * 1.2, "used \(fifth) bytes after a fifth, \(lastSize) at the end")
                    for device in online {
                        let ids = received.ids(of: device)
                        #expect(ids.count == sent.count && Set(ids) == Set(sent), "\(device): \(ids.count) of \(sent.count)")
                    }
                    // Away since the start, past the horizon: told how many expired, given the rest.
                    let events = try await RetentionTests.events(
                        hub, device: away, token: hub.token(hub.listen), after: 0, notifications: 1)
                    let gap = try BuiltInPushGap(
                        json: JSONValue(parsing: try #require(events.first { $0.event == BuiltInPushGap.event }).data))
                    let expired = try #require(gap.expired)
                    let left = try await store.deliveries(hub: hub.hub, device: away, after: gap.through, limit: 100_000)
                    #expect(expired > 0 && expired + left.count == sent.count, "\(expired) expired, \(left.count) kept")
                }
            } catch { failure = error }
            try await streams.shutdown()
            if let failure { throw failure }
        }
    }

    /// A device's stream, resumed from its last event when it ends, until the test is done.
    static func follow(_ hub: TestHub, device: String, into received: Received, client: HTTPClient) async throws {
        var last: Int64 = 0
        while !received.isFinished, !Task.isCancelled {
            var request = HTTPClientRequest(
                url: hub.baseURL + BuiltInPushDelivery.path(hub: hub.hub, device: device, resource: "stream"))
            request.headers.add(name: "Authorization", value: hub.token(hub.listen))
            request.headers.add(name: "Last-Event-ID", value: String(last))
            do {
                let response = try await client.execute(request, timeout: .seconds(600))
                var parser = ServerSentEventParser()
                for try await chunk in response.body {
                    for event in try parser.feed(chunk.readableBytesView) {
                        if let id = event.id.flatMap(Int64.init) { last = max(last, id) }
                        guard event.event == "notification" else { continue }
                        received.add(device, try BuiltInPushDelivery(json: JSONValue(parsing: event.data)).notificationId)
                    }
                    if received.isFinished { return }
                }
            } catch  where !Task.isCancelled && !received.isFinished {
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// What each device received, in order.
    final class Received: Sendable {
        private let state = Mutex<(ids: [String: [String]], finished: Bool)>(([:], false))
        func add(_ device: String, _ id: String) { state.withLock { $0.ids[device, default: []].append(id) } }
        func ids(of device: String) -> [String] { state.withLock { $0.ids[device] ?? [] } }
        func everyone(of devices: [String], has count: Int) -> Bool {
            state.withLock { state in devices.allSatisfy { (state.ids[$0]?.count ?? 0) >= count } }
        }
        func finish() { state.withLock { $0.finished = true } }
        var isFinished: Bool { state.withLock { $0.finished } }
    }
}
