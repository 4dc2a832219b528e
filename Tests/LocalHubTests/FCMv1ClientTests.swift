import AsyncHTTPClient
import Crypto
import Foundation
import HubTestSupport
import NIOSSL
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// The FCM v1 client against a loopback token endpoint and FCM: the service-account grant
/// with an RS256 assertion the peer verifies, one access token shared by many sends and
/// renewed once after a 401, the device token set in the sender's message, and FCM's
/// answers turned into outcomes and retries.
struct FCMv1ClientTests {
    static let device = "fcm-device-" + String(repeating: "a1", count: 40)
    static let alert = Array(#"{"message":{"notification":{"title":"Breaking World News","body":"hi"}}}"#.utf8)
    /// One key for the whole suite: making an RSA key takes a while.
    static let account = Result { try FCMPeer.ServiceAccount() }

    /// A client for `account` and a peer (checking assertions with `peerAccount`'s key, by
    /// default the account's own), serving while `body` runs.
    static func withPeer<T>(
        _ behaviours: [String: FCMPeer.Behaviour] = [:], otherwise: FCMPeer.Behaviour = .accept,
        peerAccount: FCMPeer.ServiceAccount? = nil, concurrent: Int = 100, delay: Duration = .zero,
        _ body: (FCMv1Client, FCMPeer) async throws -> T
    ) async throws -> T {
        let account = try Self.account.get()
        let peer = FCMPeer(
            key: (peerAccount ?? account).key.publicKey, projectId: account.projectId, clientEmail: account.clientEmail,
            behaviours: behaviours, otherwise: otherwise, delay: delay)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        return try await peer.serve { url in
            let credentials = try account.credentials(for: peer, at: url, in: folder)
            let client = try FCMv1Client(
                credentials, maximumConcurrent: concurrent, backoff: Backoff(base: 0.01, maximum: 0.05), retries: 3)
            do {
                let result = try await body(client, peer)
                await client.shutdown()
                return result
            } catch {
                await client.shutdown()
                throw error
            }
        }
    }

    static func delivered(_ answer: PushAnswer) -> Bool {
        if case .delivered = answer { true } else { false }
    }

    @Test(.tags(.live), .fullSuiteOnly) func aMessageArrivesWithTheDeviceTokenSetAndTheSendersMessageKept() async throws {
        let payload = Array(
            #"{"message":{"topic":"news","token":"someone-else","data":{"id":"7"},"android":{"priority":"high"},"notification":{"title":"T"}},"validate_only":true}"#
                .utf8)
        try await Self.withPeer { client, peer in
            let answer = await client.send(device: Self.device, payload: payload, headers: ["x-other": "no"])
            guard case .delivered(let id) = answer else {
                Issue.record("\(answer)")
                return
            }
            #expect(id?.hasPrefix("projects/news-1/messages/") == true, "FCM's message name: \(id ?? "none")")
            let received = try #require(peer.received.first)
            #expect(received.device == Self.device)
            let message = try #require(received.message)
            #expect(message["topic"] == nil && message["condition"] == nil, "the device is the only target")
            #expect(message["data"] == .object([("id", .string("7"))]))
            #expect(message["android"] == .object([("priority", .string("high"))]))
            #expect(message["notification"] == .object([("title", .string("T"))]))
            #expect(!received.body.contains("validate_only"), "a dry run would report a delivery that never was")
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func oneAccessTokenServesManySends() async throws {
        try await Self.withPeer { client, peer in
            for n in 0..<5 {
                #expect(Self.delivered(await client.send(device: "\(Self.device)-\(n)", payload: Self.alert, headers: [:])))
            }
            #expect(peer.accessTokensIssued == 1)
            #expect(Set(peer.received.compactMap(\.accessToken)).count == 1)
        }
    }

    @Test func anAccessTokenIsRenewedBeforeItExpires() {
        #expect(FCMAccessToken.renewal(after: 3600) == 3300, "5 minutes early")
        #expect(FCMAccessToken.renewal(after: 3599) == 3299)
        #expect(FCMAccessToken.renewal(after: 120) == 60, "halfway when it lasts less than 10 minutes")
        #expect(FCMAccessToken.renewal(after: 0) == 0 && FCMAccessToken.renewal(after: -5) == 0)
    }

    @Test(.tags(.live), .fullSuiteOnly) func theKeptTokenIsUsedUntilItsRenewalThenANewOneFetched() async throws {
        let account = try Self.account.get()
        let peer = FCMPeer(account: account)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await peer.serve { url in
            let token = try FCMAccessToken(try account.credentials(for: peer, at: url, in: folder))
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(peer.certificateFile)]
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
            // Fetched (as far as the cache knows) almost an hour ago: an assertion made then
            // is still valid, and the token it brought is due for renewal now.
            let past = Date().addingTimeInterval(-3400)
            do {
                let first = try await token.token(using: http, now: past)
                #expect(try await token.token(using: http, now: past.addingTimeInterval(3299)) == first)
                #expect(peer.accessTokensIssued == 1)
                let second = try await token.token(using: http)
                #expect(second != first && peer.accessTokensIssued == 2)
                #expect(try await token.token(using: http) == second)
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func a401RenewsTheAccessTokenOnce() async throws {
        try await Self.withPeer([Self.device: .expireFirstToken]) { client, peer in
            #expect(Self.delivered(await client.send(device: Self.device, payload: Self.alert, headers: [:])))
            #expect(peer.received.map(\.answered) == [401, 200])
            let tokens = peer.received.map { $0.accessToken ?? "" }
            #expect(tokens.count == 2 && tokens[0] != tokens[1] && peer.accessTokensIssued == 2)
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func requestsInFlightWhenTheTokenExpiresShareOneRenewal() async throws {
        try await Self.withPeer(otherwise: .expireFirstToken, delay: .milliseconds(5)) { client, peer in
            let answers = await Self.sendAll(client, devices: (0..<40).map { "\(Self.device)-\($0)" })
            #expect(answers.allSatisfy(Self.delivered), "\(answers)")
            #expect(peer.accessTokensIssued == 2, "one renewal for all")
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func refusalsComeBackWithFCMsErrorCodeAndAreNotRetried() async throws {
        let (gone, bad, foreign) = ("gone", "bad", "foreign")
        let behaviours: [String: FCMPeer.Behaviour] = [
            gone: .unregistered, bad: .invalidArgument, foreign: .senderIdMismatch,
        ]
        try await Self.withPeer(behaviours) { client, peer in
            #expect(
                await client.send(device: gone, payload: Self.alert, headers: [:])
                    == .refused(status: 404, reason: "UNREGISTERED"))
            #expect(
                await client.send(device: bad, payload: Self.alert, headers: [:])
                    == .refused(status: 400, reason: "INVALID_ARGUMENT"))
            #expect(
                await client.send(device: foreign, payload: Self.alert, headers: [:])
                    == .refused(status: 403, reason: "SENDER_ID_MISMATCH"))
            #expect(peer.received.map(\.answered) == [404, 400, 403], "each tried once")
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func throttlingIsRetriedAndAServiceThatStaysDownGivenUp() async throws {
        let busy = "busy"
        let down = "down"
        try await Self.withPeer([
            busy: .fail(status: 429, times: 2, retryAfter: "0"), down: .fail(status: 503, times: 100, retryAfter: nil),
        ]) { client, peer in
            #expect(Self.delivered(await client.send(device: busy, payload: Self.alert, headers: [:])))
            #expect(
                await client.send(device: down, payload: Self.alert, headers: [:])
                    == .refused(status: 503, reason: "UNAVAILABLE"))
            #expect(peer.received.filter { $0.device == busy }.map(\.answered) == [429, 429, 200])
            #expect(peer.received.filter { $0.device == down }.count == 4, "the first try and three retries")
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func anAssertionSignedWithAnotherKeyIsRefused() async throws {
        try await Self.withPeer(peerAccount: try FCMPeer.ServiceAccount()) { client, peer in
            #expect(
                await client.send(device: Self.device, payload: Self.alert, headers: [:])
                    == .refused(status: 401, reason: "invalid_grant"))
            #expect(peer.assertionsRefused == 1 && peer.accessTokensIssued == 0)
            #expect(peer.received.isEmpty, "nothing reached FCM without an access token")
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func payloadsNotInTheFCMv1FormatAreRefusedWithoutARequest() async throws {
        let bad = [
            "", "not json", "[]", #"{"notification":{"title":"t"}}"#, #"{"message":"text"}"#, #"{"message":[]}"#,
            #"{"data":{"a":"b"}}"#,
        ]
        let large = Array(#"{"message":{"data":{"a":"\#(String(repeating: "x", count: 4100))"}}}"#.utf8)
        for payload in bad { #expect(FCMv1Client.check(Array(payload.utf8)) != nil, "\(payload)") }
        #expect(FCMv1Client.check(large)?.contains("4096") == true)
        #expect(FCMv1Client.check(Self.alert) == nil)
        try await Self.withPeer { client, peer in
            for payload in bad.map({ Array($0.utf8) }) + [large] {
                #expect(
                    await client.send(device: Self.device, payload: payload, headers: [:])
                        == .refused(status: 400, reason: "INVALID_ARGUMENT"))
            }
            #expect(peer.received.isEmpty && peer.accessTokensIssued == 0)
        }
    }

    @Test func aKeyThatIsNotPKCS8RSAIsRefusedWithoutQuotingIt() throws {
        let account = try Self.account.get()
        let pkcs1 = account.key.pemRepresentation
        #expect(pkcs1.hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
        let body = String(pkcs1.split(separator: "\n")[1])
        let cases: [(String, FCMCredentialError)] = [
            (pkcs1, .pkcs1Key),
            ("-----BEGIN PRIVATE KEY-----\nMIIEgarbage\(body)\n-----END PRIVATE KEY-----\n", .notRSAKey),
            (P256.Signing.PrivateKey().pemRepresentation, .notRSAKey),
            ("\(body)", .notPEM),
        ]
        for (pem, expected) in cases {
            let credentials = PushCredentials.FCMv1(
                projectId: "news-1", clientEmail: account.clientEmail, privateKeyPEM: pem,
                tokenURI: "https://127.0.0.1:9/token", endpoint: "https://127.0.0.1:9", caFile: nil)
            do {
                _ = try FCMAccessToken(credentials)
                Issue.record("\(expected) was taken")
            } catch {
                #expect(error == expected)
                let text = "\(error)"
                #expect(!text.contains(body.prefix(16)) && !text.contains("MII"), "the error does not quote the key: \(text)")
            }
        }
        let pkcs1Credentials = PushCredentials.FCMv1(
            projectId: "news-1", clientEmail: account.clientEmail, privateKeyPEM: pkcs1,
            tokenURI: "https://127.0.0.1:9/token", endpoint: "https://127.0.0.1:9", caFile: nil)
        #expect(throws: FCMCredentialError.pkcs1Key) { try FCMv1Client(pkcs1Credentials) }
        // Google's own shape, PKCS #8, is taken.
        let credentials = PushCredentials.FCMv1(
            projectId: "news-1", clientEmail: account.clientEmail, privateKeyPEM: account.privateKeyPEM,
            tokenURI: "https://127.0.0.1:9/token", endpoint: "https://127.0.0.1:9", caFile: nil)
        let token = try FCMAccessToken(credentials)
        #expect(token.publicKey.pemRepresentation == account.key.publicKey.pemRepresentation)
    }

    @Test(.tags(.live), .fullSuiteOnly) func aHundredConcurrentSendsAllArriveWithinTheCap() async throws {
        try await Self.withPeer { client, peer in
            let answers = await Self.sendAll(client, devices: (0..<100).map { "\(Self.device)-\($0)" })
            #expect(answers.allSatisfy(Self.delivered), "\(answers.filter { !Self.delivered($0) }.prefix(3))")
            #expect(Set(peer.received.compactMap(\.device)).count == 100)
            #expect(peer.accessTokensIssued == 1, "one fetch shared by all")
        }
        try await Self.withPeer(concurrent: 4, delay: .milliseconds(10)) { client, peer in
            let answers = await Self.sendAll(client, devices: (0..<30).map { "\(Self.device)-\($0)" })
            #expect(answers.allSatisfy(Self.delivered))
            #expect(peer.peakConcurrency <= 4, "at most 4 requests in flight: \(peer.peakConcurrency)")
        }
    }

    static func sendAll(_ client: FCMv1Client, devices: [String]) async -> [PushAnswer] {
        await withTaskGroup(of: PushAnswer.self) { group in
            for device in devices {
                group.addTask { await client.send(device: device, payload: Self.alert, headers: [:]) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }
}
