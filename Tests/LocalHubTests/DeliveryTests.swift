import Foundation
import HubTestSupport
import LocalHub
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

/// The built-in push service's device streams and inbox over a socket, and a hub's state
/// through a restart (who a send reaches is `DispatchPlanningTests`, in process).
@Suite(.tags(.live), .fullSuiteOnly) struct DeliveryTests {
    func deliveries(_ hub: TestHub, _ device: String) async throws -> [BuiltInPushDelivery] {
        let response = try await raw(
            .GET, hub.baseURL + BuiltInPushDelivery.path(hub: "news", device: device, resource: "deliveries"),
            headers: [("Authorization", hub.token(hub.full))])
        return try (JSONValue(parsing: response.body)["deliveries"]?.arrayValue ?? []).map { try BuiltInPushDelivery(json: $0) }
    }

    /// Waits until the dispatcher has handled `receipt`.
    func settle(_ hub: TestHub, _ receipt: SendReceipt) async throws {
        let client = try hub.client(hub.full)
        let id = try #require(receipt.notificationId)
        try await eventually("the dispatcher to handle \(id)") {
            let state = try await client.notificationDetails(id: id).state
            return ![.enqueued, .processing].contains(state)
        }
    }

    @Test func streamResumesPollPagesAndResetClears() async throws {
        try await TestHub.with { hub in
            let device = randomDevice()
            try await hub.client(hub.listen).createOrUpdateInstallation(newsInstallation("s", device: device, tags: ["World"]))
            let sender = try hub.client(hub.full)
            for i in 1...5 { _ = try await sender.send(.template(["messageParam": "n\(i)"]), tagExpression: "World") }
            let token = hub.token(hub.listen)
            let all = try await readStream(baseURL: hub.baseURL, hub: "news", device: device, token: token, count: 5)
            #expect(all.compactMap(\.alertText) == ["n1", "n2", "n3", "n4", "n5"])
            #expect(all.map(\.seq) == all.map(\.seq).sorted())
            let resumed = try await readStream(
                baseURL: hub.baseURL, hub: "news", device: device, token: token, lastEventId: all[2].seq, count: 2)
            #expect(resumed.compactMap(\.alertText) == ["n4", "n5"])
            let poll = try await raw(
                .GET,
                hub.baseURL + BuiltInPushDelivery.path(hub: "news", device: device, resource: "inbox")
                    + "?since=\(all[0].seq)&limit=2",
                headers: [("Authorization", token)])
            let page = try JSONValue(parsing: poll.body)
            #expect(page["deliveries"]?.arrayValue?.count == 2)
            #expect(page["next"] == .number(String(all[2].seq)))
            let reset = try await raw(
                .DELETE, hub.baseURL + BuiltInPushDelivery.path(hub: "news", device: device, resource: "deliveries"),
                headers: [("Authorization", hub.token(hub.full))])
            #expect(try JSONValue(parsing: reset.body)["deleted"] == .number("5"))
            #expect(try await deliveries(hub, device).isEmpty)
        }
    }

    @Test func liveStreamGetsSendsMadeWhileConnected() async throws {
        try await TestHub.with(keepAlive: .milliseconds(200)) { hub in
            let device = randomDevice()
            try await hub.client(hub.listen).createOrUpdateInstallation(
                newsInstallation("live", device: device, tags: ["Sports"]))
            let token = hub.token(hub.listen)
            async let received = readStream(
                baseURL: hub.baseURL, hub: "news", device: device, token: token, count: 3, timeout: 30)
            try await Task.sleep(nanoseconds: 300_000_000)
            let sender = try hub.client(hub.full)
            for i in 1...3 { _ = try await sender.send(.template(["messageParam": "live \(i)"]), tagExpression: "Sports") }
            #expect(try await received.compactMap(\.alertText) == ["live 1", "live 2", "live 3"])
        }
    }

    /// Live frames are written below the HTTP layers as chunks of the stream's chunked
    /// response: read byte for byte, the response must be valid HTTP/1.1 chunked framing
    /// around exactly the backlog, the live frames and a keep-alive, in order.
    @Test func aLiveStreamIsWellFormedChunkedHTTP() async throws {
        try await TestHub.with(keepAlive: .milliseconds(200)) { hub in
            let device = randomDevice()
            try await hub.client(hub.listen).createOrUpdateInstallation(
                newsInstallation("wire", device: device, tags: ["Sports"]))
            let sender = try hub.client(hub.full)
            try await settle(hub, try await sender.send(.template(["messageParam": "backlog"]), tagExpression: "Sports"))
            let connection = try RawConnection(port: hub.port)
            try connection.send(
                "GET \(BuiltInPushDelivery.path(hub: "news", device: device, resource: "stream")) HTTP/1.1\r\n"
                    + "Host: 127.0.0.1:\(hub.port)\r\nAuthorization: \(hub.token(hub.listen))\r\n\r\n")
            // All of it in one read: the head and backlog, then the live frames and a
            // keep-alive after them.
            async let reading = connection.read(timeout: 30) { text in
                guard let live = text.range(of: "live 2 é") else { return false }
                return text[live.upperBound...].contains(": keepalive")
            }
            try await Task.sleep(nanoseconds: 300_000_000)
            for text in ["live \"1\"", "live 2 é"] {
                _ = try await sender.send(.template(["messageParam": text]), tagExpression: "Sports")
            }
            let answer = await reading.text
            let parts = answer.components(separatedBy: "\r\n\r\n")
            #expect(parts.first?.hasPrefix("HTTP/1.1 200") == true)
            #expect(parts.first?.lowercased().contains("transfer-encoding: chunked") == true)
            // Every chunk: its length in hex, CRLF, that many bytes, CRLF.
            var rest = Array(answer.utf8.dropFirst(parts[0].utf8.count + 4))[...]
            var body: [UInt8] = []
            while let end = rest.firstIndex(of: UInt8(ascii: "\r")), rest.count > end - rest.startIndex + 1 {
                let size = try #require(Int(String(decoding: rest[..<end], as: UTF8.self), radix: 16))
                let data = rest[(end + 2)...].prefix(size)
                guard data.count == size, rest.count >= end - rest.startIndex + 2 + size + 2 else { break }
                body += data
                #expect(Array(rest[(end + 2 + size)...].prefix(2)) == Array("\r\n".utf8))
                rest = rest[(end + 2 + size + 2)...]
            }
            #expect(rest.isEmpty, "left unframed: \(String(decoding: rest, as: UTF8.self))")
            var parser = ServerSentEventParser()
            let events = try parser.feed(body)
            let alerts = try events.filter { $0.event == "notification" }.map {
                try BuiltInPushDelivery(json: JSONValue(parsing: $0.data)).alertText
            }
            #expect(alerts == ["backlog", "live \"1\"", "live 2 é"])
            #expect(String(decoding: body, as: UTF8.self).hasSuffix(": keepalive\n\n"))
        }
    }

    @Test func stateSurvivesARestart() async throws {
        let directory = TestHub.temporaryDirectory()
        try await TestHub.with(directory: directory) { first in
            let device = randomDevice()
            try await first.client(first.listen).createOrUpdateInstallation(
                newsInstallation("keep", device: device, tags: ["World"]))
            var registration = Registration(kind: .appleNative, deviceToken: randomDevice(), tags: ["World"])
            registration = try await first.client(first.listen).createOrUpdateRegistration(registration)
            try await settle(
                first, try await first.client(first.full).send(.template(["messageParam": "before"]), tagExpression: "World"))
            await first.stop()
            try await TestHub.with(directory: directory) { second in
                #expect(try await second.client(second.listen).installation(id: "keep").tags == ["World"])
                #expect(
                    try await second.client(second.listen).registration(id: registration.registrationId!).deviceToken
                        == registration.deviceToken)
                _ = try await second.client(second.full).send(.template(["messageParam": "after"]), tagExpression: "World")
                let got = try await readStream(
                    baseURL: second.baseURL, hub: "news", device: device, token: second.token(second.listen), count: 2)
                #expect(got.compactMap(\.alertText) == ["before", "after"])
            }
        }
    }
}
