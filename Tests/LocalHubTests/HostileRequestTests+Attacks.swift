import Foundation
import GRDB
import HubTestSupport
import LocalHub
import LocalHubSupport
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

/// Issue 10: what the attack pass and the review found after the first hardening.
extension HostileRequestTests {
    @Test(.tags(.live), .fullSuiteOnly) func attack_streamsCannotHoldEveryConnection() async throws {
        try await TestHub.with(configure: { $0.maximumConnections = 8 }) { hub in
            // Terminals' devices, claimed: the hub streams only to devices it knows.
            let listen = try hub.client(hub.listen)
            func openStream(closing: Bool = false) async throws -> RawConnection {
                let device = randomDevice()
                let secret = try #require(try await listen.claimBuiltInPushDevice(device).secret)
                let connection = try RawConnection(port: hub.port)
                try connection.send(
                    "GET \(BuiltInPushDelivery.path(hub: "news", device: device, resource: "stream")) HTTP/1.1\r\n"
                        + "Host: 127.0.0.1:\(hub.port)\r\nAuthorization: \(hub.token(hub.listen))\r\n"
                        + "\(BuiltInPushDelivery.claimSecretHeader): \(secret)\r\n"
                        + (closing ? "Connection: close\r\n\r\n" : "\r\n"))
                return connection
            }
            // Six of the eight connections may stream (three quarters).
            var open: [RawConnection] = []
            for _ in 0..<6 { open.append(try await openStream()) }
            try await eventually("six streams counted in /metrics", every: .milliseconds(50)) {
                metricValue(try await raw(.GET, hub.baseURL + "/metrics").body, "hub_stream_clients") == 6
            }
            // The seventh is turned away, and the hub still answers everything else.
            let seventh = try await openStream(closing: true)
            let answer = await seventh.readUntilClosed(timeout: 60)
            #expect(answer.text.hasPrefix("HTTP/1.1 503"), "\(answer.text)")
            #expect(answer.text.contains("Retry-After"))
            try await expectHealthy(hub)
            open.removeAll()
        }
    }

    /// What a JSON writer leaves unescaped (DEL, C1 controls such as NEL) is news, not an
    /// attack: a template holding it is stored, a send carrying it is delivered intact; the
    /// terminal cleans it where it is shown.
    @Test(.tags(.live), .fullSuiteOnly) func delAndC1ControlsInBodiesAreDeliveredIntact() async throws {
        try await TestHub.with { hub in
            let device = randomDevice()
            var installation = newsInstallation("c1", device: device, tags: ["World"])
            let body = "{\"aps\":{\"alert\":\"$(messageParam)\"},\"from\":\"\u{85}\u{7F}\"}"
            installation.templates = ["t": InstallationTemplate(body: body)]
            try await hub.client(hub.listen).createOrUpdateInstallation(installation)
            #expect(try await hub.client(hub.full).installation(id: "c1").templates?["t"]?.body == body)
            _ = try await hub.client(hub.full).send(.template(["messageParam": "a\u{7F}b\u{9B}c"]), tagExpression: "World")
            let got = try await readStream(
                baseURL: hub.baseURL, hub: "news", device: device, token: hub.token(hub.listen), count: 1)
            #expect(got.first?.alertText == "a\u{7F}b\u{9B}c")
            // A noncharacter still cannot be stored: XML cannot carry it.
            installation.templates = ["t": InstallationTemplate(body: "{\"aps\":{\"alert\":\"\u{FFFE}\"}}")]
            await #expect(throws: HubError.self) { try await hub.client(hub.listen).createOrUpdateInstallation(installation) }
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func attack_malformedFramingIsTheClientsError() async throws {
        try await TestHub.with { hub in
            let connection = try RawConnection(port: hub.port)
            try connection.send(
                "PUT /news/installations/x HTTP/1.1\r\nHost: 127.0.0.1:\(hub.port)\r\nAuthorization: \(hub.token(hub.listen))\r\n"
                    + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\nabc")
            let answer = await connection.readUntilClosed(timeout: 60)
            #expect(answer.text.hasPrefix("HTTP/1.1 400"), "\(answer.text)")
            let hostile = try RawConnection(port: hub.port)
            try hostile.send("GET /healthz HTTP/1.1\r\nHost: a\"<b>\r\nConnection: close\r\n\r\n")
            #expect(await hostile.readUntilClosed(timeout: 60).text.hasPrefix("HTTP/1.1 400"))
            let metrics = try await raw(.GET, hub.baseURL + "/metrics")
            #expect(!metrics.body.contains("status=\"500\""), "\(metrics.body)")
        }
    }
}
