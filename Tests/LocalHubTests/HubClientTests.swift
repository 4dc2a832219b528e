import Foundation
import HubTestSupport
import LocalHub
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

/// The hub driven by `HubClient`, over HTTP, the way the terminal drives it.
@Suite struct HubClientTests {
    @Test(.tags(.live), .fullSuiteOnly) func installationLifecycle() async throws {
        try await TestHub.with { hub in
            let device = try hub.client(hub.listen)
            // The tutorial's check: nothing registered yet is a 404, which proves the token works.
            let missing = await #expect(throws: HubError.self) { try await device.installation(id: "term-1") }
            #expect(missing?.status == 404)
            #expect(missing?.detail.hasPrefix("Installation not found") == true)

            let installation = newsInstallation("term-1", device: "ABCDEF0123456789", tags: ["World", "Sports"], userId: "ana")
            try await device.createOrUpdateInstallation(installation)
            let read = try await device.installation(id: "term-1")
            #expect(read.tags == ["World", "Sports"])
            #expect(read.userId == "ana")
            #expect(read.pushChannelExpired == false)
            #expect(read.expirationTime == W3CDate.never)
            #expect(read.templates?["simpleAPNSTemplate"]?.tags == ["simpleAPNSTemplate"])

            try await device.patchInstallation(id: "term-1", [.add("/tags", "Science"), .remove("/tags/World")])
            #expect(try await device.installation(id: "term-1").tags == ["Sports", "Science"])

            // PUT is a full overwrite.
            try await device.createOrUpdateInstallation(
                Installation(installationId: "term-1", platform: .apns, pushChannel: "ABCDEF0123456789"))
            let overwritten = try await device.installation(id: "term-1")
            #expect(overwritten.tags == nil)
            #expect(overwritten.templates == nil)

            try await device.deleteInstallation(id: "term-1")
            try await device.deleteInstallation(id: "term-1")  // 204 also when absent
            await #expect(throws: HubError.self) { try await device.installation(id: "term-1") }
        }
    }

    /// A hub that is not there is `unreachable`, described as people say it, whatever error
    /// type the transport raised; one that takes no connection in time is `timedOut`.
    @Test(.tags(.live), .fullSuiteOnly) func transportFailuresAreClassifiedAndDescribed() async throws {
        let closed = try ConnectionString(parsing: "Endpoint=http://127.0.0.1:1/;SharedAccessKeyName=k;SharedAccessKey=dg==")
        let error = await #expect(throws: HubError.self) {
            try await HubClient(connectionString: closed, hub: "news", retryPolicy: .none).installation(id: "x")
        }
        #expect(error?.isUnreachable == true)
        #expect(error?.detail.hasSuffix("connection refused") == true, "\(error?.detail ?? "")")
    }

    /// A client made per call (every send does) reuses the token of the clients before it:
    /// a token's expiry is in whole seconds, so a fresh signature a second later differs.
    @Test func clientsOfOneHubAndKeyShareTheirToken() async throws {
        let cs = try ConnectionString(
            parsing: "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=dg==")
        let first = await HubClient(connectionString: cs, hub: "shared-token-test").authorizationHeader()
        try await Task.sleep(nanoseconds: 1_100_000_000)
        #expect(await HubClient(connectionString: cs, hub: "shared-token-test").authorizationHeader() == first)
        #expect(await HubClient(connectionString: cs, hub: "another-hub").authorizationHeader() != first)
    }

    @Test(.tags(.live), .fullSuiteOnly) func patchOfAMissingInstallationIs404() async throws {
        try await TestHub.with { hub in
            let error = await #expect(throws: HubError.self) {
                try await hub.client(hub.listen).patchInstallation(id: "nobody", [.add("/tags", "World")])
            }
            #expect(error?.status == 404)
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func templateSendReachesOnlyItsCategory() async throws {
        try await TestHub.with { hub in
            let listen = try hub.client(hub.listen)
            let world = randomDevice()
            let politics = randomDevice()
            try await listen.createOrUpdateInstallation(newsInstallation("a", device: world, tags: ["World", "Sports"]))
            try await listen.createOrUpdateInstallation(newsInstallation("b", device: politics, tags: ["Politics"]))
            let sender = try hub.client(hub.full)
            let receipt = try await sender.send(
                .template(["messageParam": "Breaking World News : hello"]), tagExpression: "World")
            #expect(receipt.notificationId?.isEmpty == false)
            #expect(receipt.location?.contains("/news/messages/") == true)
            _ = try await sender.send(.template(["messageParam": "Breaking Politics News : vote"]), tagExpression: "Politics")

            let token = hub.token(hub.listen)
            let a = try await readStream(baseURL: hub.baseURL, hub: "news", device: world, token: token, count: 1)
            #expect(a.map(\.alertText) == ["Breaking World News : hello"])
            #expect(a.first?.notificationId == receipt.notificationId)
            let b = try await readStream(baseURL: hub.baseURL, hub: "news", device: politics, token: token, count: 1)
            #expect(b.map(\.alertText) == ["Breaking Politics News : vote"])
            // The inspection endpoint agrees: nothing else was delivered.
            let inspected = try await raw(
                .GET, hub.baseURL + BuiltInPushDelivery.path(hub: "news", device: world, resource: "deliveries"),
                headers: [("Authorization", hub.token(hub.full))])
            #expect(try JSONValue(parsing: inspected.body)["deliveries"]?.arrayValue?.count == 1)
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func testSendReturnsTheOutcomeOfEachDevice() async throws {
        try await TestHub.with { hub in
            let listen = try hub.client(hub.listen)
            let device = randomDevice()
            try await listen.createOrUpdateInstallation(newsInstallation("t1", device: device, tags: ["World"]))
            let receipt = try await hub.client(hub.full).testSend(.template(["messageParam": "x"]), tagExpression: "World")
            let outcome = try #require(receipt.outcome)
            #expect(outcome.success == 1)
            #expect(outcome.failure == 0)
            #expect(outcome.results.first?.pnsHandle == device)
            #expect(outcome.results.first?.outcome == NotificationOutcome.sent)
            let none = try await hub.client(hub.full).testSend(.template(["messageParam": "x"]), tagExpression: "Nobody")
            #expect(none.outcome == NotificationOutcome(success: 0, failure: 0, results: []))
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func nativeAndDirectSends() async throws {
        try await TestHub.with { hub in
            let device = randomDevice()
            try await hub.client(hub.listen).createOrUpdateInstallation(newsInstallation("n1", device: device, tags: ["Science"]))
            let sender = try hub.client(hub.full)
            _ = try await sender.send(.apple(payload: #"{"aps":{"alert":"native"}}"#), tagExpression: "Science")
            _ = try await sender.sendDirect(.apple(payload: #"{"aps":{"alert":"direct"}}"#), deviceHandle: device.uppercased())
            let got = try await readStream(
                baseURL: hub.baseURL, hub: "news", device: device, token: hub.token(hub.listen), count: 2)
            #expect(got.map(\.alertText) == ["native", "direct"])
            #expect(got.allSatisfy { $0.template == nil })
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func notificationDetailsCountOutcomes() async throws {
        try await TestHub.with { hub in
            try await hub.client(hub.listen).createOrUpdateInstallation(
                newsInstallation("d1", device: randomDevice(), tags: ["World"]))
            let sender = try hub.client(hub.full)
            let receipt = try await sender.send(.template(["messageParam": "hi"]), tagExpression: "World")
            let id = try #require(receipt.notificationId)
            let details = try await eventually("the send to be handled") { () async throws -> NotificationDetails? in
                let details = try await sender.notificationDetails(id: id)
                return [.enqueued, .processing].contains(details.state) ? nil : details
            }
            #expect(details.state == .completed)
            #expect(details.apnsOutcomeCounts == ["Success": 1])
            #expect(details.tags == "World")
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func legacyRegistrations() async throws {
        try await TestHub.with { hub in
            let listen = try hub.client(hub.listen)
            let device = randomDevice()
            var registration = Registration(
                kind: .appleTemplate, deviceToken: device, tags: ["World", "Sports"],
                bodyTemplate: #"{"aps":{"alert":"$(messageParam)"}}"#,
                templateName: "simpleAPNSTemplate")
            registration.expiry = "0"
            let created = try await listen.createOrUpdateRegistration(registration)
            let id = try #require(created.registrationId)
            #expect(created.etag == "1")
            #expect(id.split(separator: "-").count == 3)
            registration.registrationId = id
            registration.tags = ["World"]
            let updated = try await listen.createOrUpdateRegistration(registration)
            #expect(updated.etag == "2")
            #expect(try await listen.registration(id: id).tags == ["World"])

            // Listing by tag needs Manage.
            let refused = await #expect(throws: HubError.self) { try await listen.registrations(tag: "World") }
            #expect(refused?.status == 403)
            let manage = try hub.client(hub.full)
            #expect(try await manage.registrations(tag: "World").map(\.registrationId) == [id])

            _ = try await manage.send(.template(["messageParam": "via registration"]), tagExpression: "World")
            let got = try await readStream(
                baseURL: hub.baseURL, hub: "news", device: device, token: hub.token(hub.listen), count: 1)
            #expect(got.first?.alertText == "via registration")

            let stale = await #expect(throws: HubError.self) { try await listen.deleteRegistration(id: id, etag: "1") }
            #expect(stale?.status == 412)
            try await listen.deleteRegistration(id: id, etag: "2")
            await #expect(throws: HubError.self) { try await listen.registration(id: id) }
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func installationsAreListedAsRegistrations() async throws {
        try await TestHub.with { hub in
            try await hub.client(hub.listen).createOrUpdateInstallation(
                newsInstallation("p1", device: "AB12", tags: ["World"], userId: "u9"))
            let listed = try await hub.client(hub.full).registrations()
            #expect(listed.count == 2)
            let native = try #require(listed.first { $0.kind == .appleNative })
            #expect(native.tags == ["World", "$InstallationId:{p1}", "$UserId:{u9}"])
            let template = try #require(listed.first { $0.kind == .appleTemplate })
            #expect(template.templateName == "simpleAPNSTemplate")
            #expect(template.tags.contains("simpleAPNSTemplate"))
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func tokenIsRenewedBeforeItExpires() async throws {
        try await TestHub.with { hub in
            // A 2 s lifetime is renewed at 1.6 s; calls 2.5 s apart still succeed.
            let client = try HubClient(connectionString: hub.listen, retryPolicy: .none, tokenLifetime: 2)
            let first = await client.authorizationHeader()
            try await client.createOrUpdateInstallation(newsInstallation("r1", device: "AB", tags: []))
            try await Task.sleep(nanoseconds: 2_500_000_000)
            _ = try await client.installation(id: "r1")
            #expect(await client.authorizationHeader() != first)
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func unreachableHubIsATransportError() async throws {
        let cs = try ConnectionString(
            parsing: "Endpoint=http://127.0.0.1:1/;SharedAccessKeyName=a;SharedAccessKey=b;EntityPath=h")
        let error = await #expect(throws: HubError.self) {
            try await HubClient(connectionString: cs, retryPolicy: .none).installation(id: "x")
        }
        #expect(error?.isUnreachable == true)
        #expect(error?.status == nil)
    }
}
