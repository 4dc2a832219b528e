import AsyncHTTPClient
import Foundation
import HubTestSupport
import NIOCore
import NIOHTTP1
import NotificationHubs
import Synchronization
import TestTiers
import Testing

@testable import LocalHub

/// Streams are for real devices (issue 26, item 4): a token nothing knows gets 404, one client
/// holds at most its share, and the last streams are kept for terminals.
@Suite struct StreamLimitTests {
    /// The statuses streams were answered with, as they come.
    final class Answers: Sendable {
        private let list = Mutex<[Int]>([])
        func append(_ status: Int) { list.withLock { $0.append(status) } }
        var all: [Int] { list.withLock { $0 } }
    }

    /// Opens a stream as `client` (an `X-Forwarded-For` the hub trusts) and keeps it open until
    /// the task is cancelled; the status it was answered with.
    static func open(
        _ hub: TestHub, _ device: String, client: String? = nil, secret: String? = nil, held: Answers
    ) -> Task<Void, Never> {
        Task {
            var request = HTTPClientRequest(
                url: hub.baseURL + BuiltInPushDelivery.path(hub: "news", device: device, resource: "stream"))
            request.headers.add(name: "Authorization", value: hub.token(hub.listen))
            if let secret { request.headers.add(name: BuiltInPushDelivery.claimSecretHeader, value: secret) }
            if let client { request.headers.add(name: "X-Forwarded-For", value: client) }
            guard let response = try? await HubClient.sharedHTTPClient.execute(request, timeout: .seconds(120)) else {
                held.append(-1)
                return
            }
            held.append(Int(response.status.code))
            // Read until cancelled (or the stream ends).
            _ = try? await response.body.collect(upTo: 64 << 20)
        }
    }

    static func statuses(_ held: Answers, count: Int) async throws -> [Int] {
        let deadline = ContinuousClock.now + .seconds(30)
        while held.all.count < count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        return held.all
    }

    /// One client cannot hold every connection the hub may have: past its share a new
    /// connection is closed at once, and one closing makes room again. A trusted proxy, which
    /// carries many clients, is not counted.
    @Test(.tags(.live), .fullSuiteOnly) func oneClientCannotHoldEveryConnection() async throws {
        func served(_ connection: RawConnection) async throws -> Bool {
            try connection.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            return await connection.readUntil(containing: "\r\n\r\n", timeout: 30).text.hasPrefix("HTTP/1.1 200")
        }
        try await TestHub.with(configure: { $0.clientRates.connections = 4 }) { hub in
            var held: [RawConnection] = []
            for _ in 0..<4 {
                let connection = try RawConnection(port: hub.port)
                #expect(try await served(connection))
                held.append(connection)
            }
            let fifth = try RawConnection(port: hub.port)
            let refused = await fifth.readUntilClosed(timeout: 30)
            #expect(refused.closed && refused.text.isEmpty, "\(refused.text)")
            held.removeFirst()
            var again = false
            let deadline = ContinuousClock.now + .seconds(30)
            while !again, ContinuousClock.now < deadline {
                again = (try? await served(try RawConnection(port: hub.port))) ?? false
                if !again { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(again, "a connection closing makes room for another")
        }
        try await TestHub.with(configure: {
            $0.clientRates.connections = 2
            $0.trustedProxies = try! TrustedProxies(["127.0.0.1"])
        }) { hub in
            var held: [RawConnection] = []
            for _ in 0..<4 {
                let connection = try RawConnection(port: hub.port)
                #expect(try await served(connection), "a trusted proxy's connections are not counted")
                held.append(connection)
            }
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func aTokenNothingKnowsGetsNotFoundWithTheReason() async throws {
        try await TestHub.with { hub in
            let stranger = randomDevice()
            let answer = try await ClaimTests.call(
                hub, .GET, BuiltInPushDelivery.path(hub: "news", device: stranger, resource: "stream"))
            #expect(answer.status == 404)
            #expect(answer.errorDetail?.contains("The device is not registered") == true, "\(answer.body)")
            // The same token, once claimed, streams, with its claim's secret.
            let claimed = try await ClaimTests.claim(hub, stranger)
            #expect(claimed.status == 200)
            let held = Answers()
            let stream = Self.open(hub, stranger, secret: ClaimTests.secret(of: claimed), held: held)
            defer { stream.cancel() }
            #expect(try await Self.statuses(held, count: 1) == [200])
        }
    }

    /// On `main`, 3,072 streams on random tokens nobody claimed took every slot and every real
    /// terminal's stream got 503.
    @Test(.tags(.live), .fullSuiteOnly) func oneClientHoldsItsShareAndTheLastStreamsAreKeptForTerminals() async throws {
        try await TestHub.with(configure: {
            $0.clientRates = ClientRates(newDevicesPerHour: 0, bytesPerHour: 0, streams: 3)
            $0.trustedProxies = try! TrustedProxies(["127.0.0.1"])
        }) { hub in
            let listen = try hub.client(hub.listen)
            // Devices known only from installations (not claimed), as a stranger makes them.
            var installed: [String] = []
            for i in 0..<5 {
                let device = randomDevice()
                installed.append(device)
                try await listen.createOrUpdateInstallation(newsInstallation("x\(i)", device: device, tags: ["World"]))
            }
            let held = Answers()
            var tasks: [Task<Void, Never>] = []
            defer { for task in tasks { task.cancel() } }
            for device in installed.prefix(4) { tasks.append(Self.open(hub, device, client: "198.51.100.7", held: held)) }
            let first = try await Self.statuses(held, count: 4)
            #expect(first.sorted() == [200, 200, 200, 429], "three for the client, the fourth refused")
            // Another client is not held back by the first.
            let other = Answers()
            tasks.append(Self.open(hub, installed[4], client: "203.0.113.5", held: other))
            #expect(try await Self.statuses(other, count: 1) == [200])
        }
    }

    @Test func theReserveIsForClaimedDevices() throws {
        let streams = DeviceStreams(maximum: 8)
        #expect(streams.reserve == 2)
        for i in 0..<6 {
            _ = try streams.listen(hub: "news", device: "d\(i)", sink: BufferedStreamSink(limit: 4), claimed: false)
        }
        #expect(streams.refusal(hub: "news", device: "x", client: nil, claimed: false) == .full)
        #expect(streams.refusal(hub: "news", device: "x", client: nil, claimed: true) == nil)
        for i in 0..<2 { _ = try streams.listen(hub: "news", device: "t\(i)", sink: BufferedStreamSink(limit: 4)) }
        #expect(streams.refusal(hub: "news", device: "x", client: nil, claimed: true) == .full)
    }
}
