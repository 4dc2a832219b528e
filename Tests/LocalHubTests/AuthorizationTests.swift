import AsyncHTTPClient
import Foundation
import HubTestSupport
import LocalHub
import NIOHTTP1
import NIOSSL
import NotificationHubs
import TestTiers
import Testing

@Suite struct AuthorizationTests {
    func status(_ hub: RouterHub, token: String?, path: String = "/news/installations/x") async throws -> RawResponse {
        try await hub.raw(.GET, hub.baseURL + path, headers: token.map { [("Authorization", $0)] } ?? [])
    }

    @Test func badTokensAre401WithTheirReason() async throws {
        try await RouterHub.with { hub in
            let good = hub.token(hub.listen)
            let cases: [(String?, String)] = [
                (nil, "MalformedToken"),
                ("Bearer x", "MalformedToken"),
                (hub.token(hub.listen, lifetime: -120), "ExpiredToken"),
                (hub.token(hub.listen, resource: hub.baseURL + "/other"), "InvalidAudience"),
                (good.replacingOccurrences(of: "skn=", with: "skn=Root"), "UnknownKey"),
                (good.replacingOccurrences(of: "&se=", with: "&se=1"), "InvalidSignature"),
            ]
            for (token, reason) in cases {
                let response = try await status(hub, token: token)
                #expect(response.status == 401, "\(reason)")
                #expect(response.errorDetail?.hasPrefix(reason) == true, "\(response.body)")
            }
        }
    }

    @Test func listenCannotSendOrListAndGets403() async throws {
        try await RouterHub.with { hub in
            let listen = hub.token(hub.listen)
            let send = try await hub.raw(
                .POST, hub.baseURL + "/news/messages",
                headers: [
                    ("Authorization", listen), ("ServiceBusNotification-Format", "template"),
                    ("Content-Type", "application/json"),
                ],
                body: #"{"a":"b"}"#)
            #expect(send.status == 403)
            #expect(send.errorDetail?.contains("Send claim") == true)
            let list = try await hub.raw(.GET, hub.baseURL + "/news/registrations", headers: [("Authorization", listen)])
            #expect(list.status == 403)
            let byTag = try await hub.raw(
                .GET, hub.baseURL + "/news/tags/World/registrations", headers: [("Authorization", listen)])
            #expect(byTag.status == 403)
            // Listing by the caller's own handle is a Listen operation.
            let own = try await hub.raw(
                .GET, hub.baseURL + "/news/registrations?$filter=ChannelUri%20eq%20'AB12'", headers: [("Authorization", listen)])
            #expect(own.status == 200)
            // Full can do all of it.
            let full = try await hub.raw(
                .GET, hub.baseURL + "/news/registrations", headers: [("Authorization", hub.token(hub.full))])
            #expect(full.status == 200)
        }
    }

    /// Issue 44: a Send-only rule read any notification's telemetry, its body included. It
    /// needs Manage (wire spec §3.4): 403 saying so, and 401 with the same words for a request
    /// that names an api-version before 2020-06 (§3.5), as every right missing does there.
    @Test func telemetryNeedsManage() async throws {
        try await RouterHub.with(rules: [("backend", [.send])]) { hub in
            let sender = hub.token(try hub.connectionString(rule: "backend"))
            let sent = try await hub.raw(
                .POST, hub.baseURL + "/news/messages?api-version=2020-06",
                headers: [
                    ("Authorization", sender), ("ServiceBusNotification-Format", "template"),
                    ("Content-Type", "application/json"),
                ],
                body: #"{"messageParam":"secret"}"#)
            #expect(sent.status == 201, "\(sent.body)")
            let location = try #require(sent.headers.first(name: "Location"))
            let id = try #require(location.split(separator: "?").first?.split(separator: "/").last)
            func details(_ token: String, version: String?) async throws -> RawResponse {
                try await hub.raw(
                    .GET, hub.baseURL + "/news/messages/\(id)" + (version.map { "?api-version=\($0)" } ?? ""),
                    headers: [("Authorization", token)])
            }
            for (version, status) in [("2020-06", 403), (nil, 403), ("2016-07", 401), ("2015-01", 401)] {
                let refused = try await details(sender, version: version)
                #expect(refused.status == status, "api-version \(version ?? "none")")
                #expect(
                    refused.errorDetail?.hasPrefix("Manage claim is required for this operation.") == true, "\(refused.body)")
                #expect(!refused.body.contains("secret"))
            }
            let listen = try await details(hub.token(hub.listen), version: "2020-06")
            #expect(listen.status == 403)
            let full = try await details(hub.token(hub.full), version: "2020-06")
            #expect(full.status == 200)
            #expect(full.body.contains("secret"))
        }
    }

    /// Below api-version 2020-06 every missing right is 401 with the claim's words.
    @Test func aMissingRightIs401BeforeApiVersion2020_06() async throws {
        try await RouterHub.with { hub in
            for (version, status) in [("2015-01", 401), ("2020-05", 401), ("2020-06", 403)] {
                let send = try await hub.raw(
                    .POST, hub.baseURL + "/news/messages?api-version=\(version)",
                    headers: [
                        ("Authorization", hub.token(hub.listen)), ("ServiceBusNotification-Format", "template"),
                        ("Content-Type", "application/json"),
                    ],
                    body: #"{"a":"b"}"#)
                #expect(send.status == status, "\(version)")
                #expect(send.errorDetail?.hasPrefix("Send claim is required for this operation.") == true, "\(send.body)")
            }
        }
    }

    @Test func keysOfOneHubDoNotOpenAnother() async throws {
        try await RouterHub.with(hubs: ["news", "sport"]) { hub in
            let namespaceToken = hub.token(hub.full, resource: hub.baseURL + "/")
            let response = try await status(hub, token: namespaceToken, path: "/sport/installations/x")
            #expect(response.status == 401)
        }
    }

    @Test func builtInPushNeedsAToken() async throws {
        try await RouterHub.with { hub throws in
            let path = BuiltInPushDelivery.path(hub: "news", device: "ab12", resource: "inbox")
            #expect(try await status(hub, token: nil, path: path).status == 401)
            // With one, the request is answered: a token the hub knows nothing of, as the stream says.
            let known = try await status(hub, token: hub.token(hub.listen), path: path)
            #expect(known.status == 404 && known.errorDetail?.contains("not registered") == true)
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func keysAreKeptWithMode0600AndReused() async throws {
        let directory = TestHub.temporaryDirectory()
        try await TestHub.with(directory: directory) { first in
            let listen = first.listen.key
            await first.stop()
            let attributes = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("keys.json").path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            try await TestHub.with(directory: directory) { second in
                #expect(second.listen.key == listen)
                #expect(Data(base64Encoded: listen)?.count == 32)
            }
        }
    }
}

@Suite(.tags(.live), .fullSuiteOnly) struct TLSTests {
    @Test func tlsServesHTTPSWithASelfSignedCertificateKeptBesideTheKeys() async throws {
        try await TestHub.with(tls: true) { hub in
            #expect(hub.baseURL.hasPrefix("https://127.0.0.1:"))
            let keyAttributes = try FileManager.default.attributesOfItem(
                atPath: hub.directory.appendingPathComponent("tls-key.pem").path)
            #expect(keyAttributes[.posixPermissions] as? Int == 0o600)
            let certificate = try String(contentsOf: hub.directory.appendingPathComponent("tls-certificate.pem"), encoding: .utf8)
            #expect(certificate.hasPrefix("-----BEGIN CERTIFICATE-----"))
            // A client that trusts the certificate (here: any) talks to it over TLS.
            var configuration = HTTPClient.Configuration()
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(hub.directory.appendingPathComponent("tls-certificate.pem").path)
            configuration.tlsConfiguration = tls
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            defer { _ = client.shutdown() }
            let hubClient = HubClient(connectionString: hub.listen, hub: "news", httpClient: client, retryPolicy: .none)
            try await hubClient.createOrUpdateInstallation(newsInstallation("tls", device: "ab12", tags: ["World"]))
            #expect(try await hubClient.installation(id: "tls").tags == ["World"])
            // A device stream over TLS: live frames go through TLS as chunks of its response.
            let sender = HubClient(connectionString: hub.full, hub: "news", httpClient: client, retryPolicy: .none)
            let stream = try await hubClient.deviceStream(device: "ab12", after: nil, epoch: nil)
            try await Task.sleep(nanoseconds: 300_000_000)
            for text in ["one", "two"] { _ = try await sender.send(.template(["messageParam": text]), tagExpression: "World") }
            var alerts: [String] = []
            for try await batch in stream {
                alerts += batch.deliveries.compactMap(\.alertText)
                if alerts.count >= 2 { break }
            }
            #expect(alerts == ["one", "two"])
        }
    }
}
