import Foundation
import HubTestSupport
import NIOHTTP1
import NotificationHubs
import Testing

@testable import LocalHub

/// Who a send reaches, and what the built-in push service makes of the payloads: the
/// dispatcher's planning through the route table in process, on the memory store (the
/// device streams and a restart, which need a socket, are `DeliveryTests`).
@Suite struct DispatchPlanningTests {
    @Test func eachTemplateOfAnInstallationThatMatchesGetsItsOwnNotification() async throws {
        try await RouterHub.with { hub in
            let device = randomDevice()
            var installation = newsInstallation("two", device: device, tags: ["World"])
            installation.templates?["second"] = InstallationTemplate(
                body: #"{"aps":{"alert":{"title":"Second","body":"$(messageParam)"}}}"#)
            try await hub.put(installation)
            try await hub.settle(try await hub.send(.template(["messageParam": "m"]), tags: "World"))
            let got = try await hub.deliveries(device)
            #expect(Set(got.compactMap(\.template)) == ["simpleAPNSTemplate", "second"])
            #expect(Set(got.compactMap(\.alertText)) == ["m", "Second: m"])
        }
    }

    @Test func templateSendsReachTemplatesAndAppleSendsReachApnsOnly() async throws {
        try await RouterHub.with { hub in
            let bare = randomDevice()
            try await hub.put(Installation(installationId: "bare", platform: .apns, pushChannel: bare, tags: ["World"]))
            let templated = randomDevice()
            try await hub.put(newsInstallation("templated", device: templated, tags: ["World"]))
            try await hub.put(
                Installation(installationId: "android", platform: .fcmV1, pushChannel: "fcm-token", tags: ["World"]))
            let template = try await hub.testSend(.template(["messageParam": "t"]), tags: "World")
            #expect(template.success == 1)
            let apple = try await hub.testSend(.apple(payload: #"{"aps":{"alert":"n"}}"#), tags: "World")
            #expect(apple.success == 2)
            #expect(try await hub.deliveries(bare).compactMap(\.alertText) == ["n"])
            #expect(try await hub.deliveries(templated).compactMap(\.alertText) == ["t", "n"])
        }
    }

    @Test func systemTagsAndTagExpressionsChooseTheDevices() async throws {
        try await RouterHub.with { hub in
            let (a, b, c) = (randomDevice(), randomDevice(), randomDevice())
            try await hub.put(newsInstallation("ia", device: a, tags: ["World", "Sports"], userId: "ann"))
            try await hub.put(newsInstallation("ib", device: b, tags: ["World"], userId: "bob"))
            try await hub.put(newsInstallation("ic", device: c, tags: ["Politics"], userId: "ann"))
            func reached(_ expression: String?) async throws -> Set<String> {
                let outcome = try await hub.testSend(.template(["messageParam": "x"]), tags: expression)
                return Set(outcome.results.map(\.pnsHandle))
            }
            #expect(try await reached("$InstallationId:{ib}") == [b])
            #expect(try await reached("$UserId:{ann}") == [a, c])
            #expect(try await reached("World && !Sports") == [b])
            #expect(try await reached("(World || Politics) && !$UserId:{bob}") == [a, c])
            #expect(try await reached(nil) == [a, b, c])
            #expect(try await reached("Nobody") == [])
        }
    }

    @Test func aPayloadThatBreaksARuleIsCountedAndNeverHalfDelivered() async throws {
        try await RouterHub.with { hub in
            let device = randomDevice()
            try await hub.put(newsInstallation("big", device: device, tags: ["World"]))
            // A 5 KB message renders past APNs' 4096 bytes.
            let tooBig = try await hub.testSend(
                .template(["messageParam": String(repeating: "é", count: 2600)]), tags: "World")
            #expect(tooBig.success == 0)
            #expect(tooBig.failure == 1)
            #expect(tooBig.results.first?.outcome.contains("InvalidNotificationSize") == true)
            let noAps = try await hub.testSend(.apple(payload: #"{"alert":"no aps"}"#), tags: "World")
            #expect(noAps.results.first?.outcome == NotificationOutcome.invalidPayload)
            let notJSON = try await hub.send(.apple(payload: #"{"aps":"#), tags: "World")
            #expect(try await hub.settle(notJSON).apnsOutcomeCounts == ["InvalidPayload": 1])
            #expect(try await hub.deliveries(device).isEmpty)
            // A good one still goes through afterwards.
            try await hub.settle(try await hub.send(.template(["messageParam": "fine"]), tags: "World"))
            #expect(try await hub.deliveries(device).compactMap(\.alertText) == ["fine"])
        }
    }

    @Test func aTestSendReachesAtMostTenDevices() async throws {
        try await RouterHub.with { hub in
            for i in 0..<12 { try await hub.put(newsInstallation("m\(i)", device: randomDevice(), tags: ["World"])) }
            let outcome = try await hub.testSend(.template(["messageParam": "x"]), tags: "World")
            #expect(outcome.success == 10)
            #expect(outcome.results.count == 10)
        }
    }
}

extension RouterHub {
    /// A send as `HubClient` makes it, with the Full key: its notification id.
    func send(_ notification: HubNotification, tags: String?, test: Bool = false) async throws -> RawResponse {
        var headers = [("Authorization", token(full)), ("Content-Type", "application/json;charset=utf-8")]
        switch notification {
        case .template(let properties):
            headers.append(("ServiceBusNotification-Format", "template"))
            let body = JSONValue.object(properties.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).text
            return try await sending(headers, tags: tags, body: body, test: test)
        case .apple(let payload, let apnsHeaders):
            headers.append(("ServiceBusNotification-Format", "apple"))
            headers += apnsHeaders.map { ($0.key, $0.value) }
            return try await sending(headers, tags: tags, body: payload, test: test)
        }
    }

    private func sending(_ headers: [(String, String)], tags: String?, body: String, test: Bool) async throws -> RawResponse {
        var headers = headers
        if let tags { headers.append(("ServiceBusNotification-Tags", tags)) }
        let response = try await raw(
            .POST, "\(baseURL)/\(hub)/messages?api-version=2020-06\(test ? "&test" : "")", headers: headers, body: body)
        try #require(response.status == 201, "the send was refused: \(response.status) \(response.body)")
        return response
    }

    /// A test send with the Full key: the outcome it answers with.
    func testSend(_ notification: HubNotification, tags: String?) async throws -> NotificationOutcome {
        try NotificationOutcome(xml: try await send(notification, tags: tags, test: true).body)
    }

    /// Waits until the dispatcher has handled the send answered with `sent`: its details then.
    @discardableResult
    func settle(_ sent: RawResponse) async throws -> NotificationDetails {
        let location = try #require(sent.headers.first(name: "Location"), "a send's answer names its notification")
        let path = try #require(URLComponents(string: location)?.path)
        return try await eventually("the dispatcher to handle \(path)") { () async throws -> NotificationDetails? in
            let answer = try await raw(
                .GET, "\(baseURL)\(path)?api-version=2020-06", headers: [("Authorization", token(full))])
            let details = try NotificationDetails(xml: answer.body)
            return [.enqueued, .processing].contains(details.state) ? nil : details
        }
    }

    /// What the built-in push service delivered to `device`, oldest first.
    func deliveries(_ device: String) async throws -> [BuiltInPushDelivery] {
        let response = try await raw(
            .GET, baseURL + BuiltInPushDelivery.path(hub: hub, device: device, resource: "deliveries"),
            headers: [("Authorization", token(full))])
        return try (JSONValue(parsing: response.body)["deliveries"]?.arrayValue ?? []).map { try BuiltInPushDelivery(json: $0) }
    }
}
