import Foundation
import HubTestSupport
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// "Why didn't it arrive?" (issue 14, item 8): the hub explains a send that matched nothing,
/// one that hit an expired channel and one whose payload failed the check, in plain words.
@Suite(.tags(.live), .fullSuiteOnly) struct ExplainTests {
    @Test func aSendThatMatchedNothingNamesTheExpressionAndTheNearMisses() async throws {
        try await TestHub.with { hub in
            let listen = try hub.client(hub.listen)
            let full = try hub.client(hub.full)
            try await listen.createOrUpdateInstallation(
                newsInstallation("near", device: randomDevice(), tags: ["Sports", "World"]))
            try await listen.createOrUpdateInstallation(newsInstallation("far", device: randomDevice(), tags: ["Science"]))
            let details = try await RealDeliveryTests.send(hub, "x", tags: "Sports && Politics")
            #expect(details.state == .noTargetFound)
            let explanation = try await full.explain(id: details.notificationId)
            #expect(
                explanation.findings.first?.hasPrefix("Nothing matched: no installation or registration of hub 'news'") == true)
            #expect(explanation.findings.first?.contains("'Sports && Politics'") == true)
            #expect(explanation.nearMisses.map(\.id) == ["near"], "holds Sports, not Politics")
            #expect(explanation.matchCount == 0 && explanation.lines.isEmpty)
        }
    }

    @Test func aSendWhosePayloadFailedTheCheckSaysSoWithItsSize() async throws {
        try await TestHub.with { hub in
            let listen = try hub.client(hub.listen)
            let full = try hub.client(hub.full)
            try await listen.createOrUpdateInstallation(newsInstallation("t", device: randomDevice(), tags: ["World"]))
            let details = try await RealDeliveryTests.send(hub, String(repeating: "long ", count: 1000))
            #expect(details.apnsOutcomeCounts == ["InvalidNotificationSize": 1])
            let explanation = try await full.explain(id: details.notificationId)
            let finding = try #require(explanation.findings.first)
            #expect(finding.hasPrefix("1 device did not get it: the payload failed the check"))
            #expect(finding.contains("the rendered payload is 5020 bytes"), "\(finding)")
            #expect(explanation.renderings.first?.refusal != nil && explanation.matches.map(\.id) == ["t"])
            #expect(explanation.lines.map(\.outcome) == ["InvalidNotificationSize"])
        }
    }

    @Test func aSendThatHitAnExpiredChannelSaysWhatTheServiceAnswered() async throws {
        try await RealDeliveryTests.withHub { hub, peers in
            let listen = try hub.client(hub.listen)
            let full = try hub.client(hub.full)
            let device = randomDevice()
            peers.apns.behave(device, .refuse(status: 410, reason: "Unregistered"))
            try await RealDeliveryTests.register(listen, "gone", device: device)
            let first = try await RealDeliveryTests.send(hub, "one")
            let explanation = try await full.explain(id: first.notificationId)
            #expect(
                explanation.findings
                    == [
                        "1 device did not get it: the push channel expired — the push service said the app is gone (APNs answered 410 Unregistered); it gets nothing until it registers again."
                    ])
            #expect(explanation.lines.first?.handle == device)
            _ = try await eventually("the installation gone to be marked expired") {
                try await listen.installation(id: "gone").pushChannelExpired == true ? true : nil
            }
            let second = try await RealDeliveryTests.send(hub, "two")
            let again = try await full.explain(id: second.notificationId)
            #expect(again.findings.first?.contains("the push channel expired") == true)
            #expect(again.matches.first?.expired == true)
        }
    }

    @Test func explainingNeedsManageAndAKnownSend() async throws {
        try await TestHub.with { hub in
            let details = try await RealDeliveryTests.send(hub, "x")
            let listen = try hub.client(hub.listen)
            await #expect(throws: HubError.self) { try await listen.explain(id: details.notificationId) }
            let url = "\(hub.baseURL)/_inspect/news/messages/\(details.notificationId)"
            let withListen = try await raw(.GET, url, headers: [("Authorization", hub.token(hub.listen))])
            #expect([401, 403].contains(withListen.status), "Listen cannot read which installations a send reached")
            let anonymous = try await raw(.GET, url)
            #expect(anonymous.status == 401)
            let full = try hub.client(hub.full)
            do {
                _ = try await full.explain(id: "no-such-send")
                Issue.record("an unknown send was explained")
            } catch let error as HubError {
                #expect(error.status == 404)
            }
            #expect(try await full.explain(id: details.notificationId).state == "NoTargetFound")
        }
    }
}
