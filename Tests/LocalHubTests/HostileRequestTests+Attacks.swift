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
    @Test(.tags(.live), .fullSuiteOnly) func attack_systemTagsCannotBeClaimedByRegistrationsOrTemplates() async throws {
        try await TestHub.with { hub in
            let headers = [("Authorization", hub.token(hub.listen)), ("Content-Type", "application/atom+xml")]
            for tag in ["$InstallationId:{victim}", "$UserId:{someone}"] {
                let entry = Self.templateEntry.replacingOccurrences(of: "<Tags>World</Tags>", with: "<Tags>World,\(tag)</Tags>")
                    .replacingOccurrences(of: "FIELDS", with: "")
                let response = try await raw(.POST, hub.baseURL + "/news/registrations", headers: headers, body: entry)
                #expect(response.status == 400, "\(tag): \(response.body)")
                #expect(response.errorDetail?.contains("system tag") == true)
            }
            var thief = newsInstallation("thief", device: randomDevice(), tags: [])
            thief.templates?["simpleAPNSTemplate"]?.tags = ["$InstallationId:{victim}"]
            let refused = await #expect(throws: HubError.self) {
                try await hub.client(hub.listen).createOrUpdateInstallation(thief)
            }
            #expect(refused?.status == 400)
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func attack_whatAHubHoldsIsBoundedInBytes() async throws {
        try await TestHub.with(configure: { $0.maximumBytesPerHub = 48 * 1024 }) { hub in
            let client = try hub.client(hub.listen)
            func big(_ id: String, _ kilobytes: Int) -> Installation {
                var installation = newsInstallation(id, device: randomDevice(), tags: [])
                installation.pushVariables = ["pad": String(repeating: "p", count: kilobytes * 1024)]
                return installation
            }
            for i in 0..<4 { try await client.createOrUpdateInstallation(big("b\(i)", 10)) }
            let refused = await #expect(throws: HubError.self) { try await client.createOrUpdateInstallation(big("b4", 10)) }
            #expect(refused?.status == 403)
            #expect(refused?.detail.contains("48 KB") == true)
            // Growing one that exists counts too, by PUT or by PATCH; deleting gives the room back.
            await #expect(throws: HubError.self) { try await client.createOrUpdateInstallation(big("b0", 20)) }
            let patch = [
                InstallationPatchOperation(
                    op: .add, path: "/pushVariables/more", value: .string(String(repeating: "m", count: 10_240)))
            ]
            let patched = await #expect(throws: HubError.self) { try await client.patchInstallation(id: "b0", patch) }
            #expect(patched?.status == 403)
            #expect(try await client.installation(id: "b0").pushVariables?["more"] == nil)
            try await client.deleteInstallation(id: "b1")
            try await client.createOrUpdateInstallation(big("b4", 10))
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func attack_streamsCannotHoldEveryConnection() async throws {
        try await TestHub.with(configure: { $0.maximumConnections = 8 }) { hub in
            // Terminals' devices, claimed: the hub streams only to devices it knows.
            let listen = try hub.client(hub.listen)
            func openStream(closing: Bool = false) async throws -> RawConnection {
                let device = randomDevice()
                #expect(try await listen.claimSandboxDevice(device))
                let connection = try RawConnection(port: hub.port)
                try connection.send(
                    "GET \(SandboxDelivery.path(hub: "news", device: device, resource: "stream")) HTTP/1.1\r\n"
                        + "Host: 127.0.0.1:\(hub.port)\r\nAuthorization: \(hub.token(hub.listen))\r\n"
                        + (closing ? "Connection: close\r\n\r\n" : "\r\n"))
                return connection
            }
            // Six of the eight connections may stream (three quarters).
            var open: [RawConnection] = []
            for _ in 0..<6 { open.append(try await openStream()) }
            var streaming = false
            for _ in 0..<600 where !streaming {
                streaming = metricValue(try await raw(.GET, hub.baseURL + "/metrics").body, "hub_stream_clients") == 6
                if !streaming { try await Task.sleep(nanoseconds: 50_000_000) }
            }
            #expect(streaming)
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
    @Test(.tags(.live), .fullSuiteOnly) func review_delAndC1ControlsInBodiesAreDeliveredIntact() async throws {
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
