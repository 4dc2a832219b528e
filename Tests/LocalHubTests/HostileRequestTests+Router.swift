import Foundation
import HubTestSupport
import LocalHub
import NIOHTTP1
import NotificationHubs
import Testing

/// Issue 10, the items that need no socket: the hub's routes in process (`RouterHub`).
extension HostileRequestTests {
    func get(_ hub: RouterHub, _ path: String, token: String? = nil) async throws -> RawResponse {
        try await hub.raw(.GET, hub.baseURL + path, headers: [("Authorization", token ?? hub.token(hub.listen))])
    }

    func expectHealthy(_ hub: RouterHub) async throws {
        #expect(try await hub.raw(.GET, hub.baseURL + "/healthz").status == 200)
    }

    @Test func item1_pagingParametersAreCheckedNotTrusted() async throws {
        try await RouterHub.with { hub in
            let filter = "$filter=DeviceToken%20eq%20'ab'"
            for query in ["continuationtoken=-1", "continuationtoken=x", "$top=-5", "continuationtoken=99999999999999999999"] {
                let response = try await get(hub, "/news/registrations?\(filter)&\(query)")
                #expect(response.status == 400, "\(query): \(response.body)")
                try await expectHealthy(hub)
            }
            let far = try await get(hub, "/news/registrations?\(filter)&continuationtoken=1000000")
            #expect(far.status == 200)
        }
    }

    @Test(arguments: ["a%00b", "a%0Db", "a%0Ab", "a%20b", "%1B%5B2J"])
    func item2_registrationIdsFollowTheServiceRules(id: String) async throws {
        try await RouterHub.with { hub in
            let response = try await hub.raw(
                .PUT, hub.baseURL + "/news/registrations/\(id)",
                headers: [("Authorization", hub.token(hub.listen)), ("Content-Type", "application/atom+xml")],
                body: Self.templateEntry.replacingOccurrences(of: "FIELDS", with: ""))
            #expect(response.status == 400, "\(id): \(response.body)")
            #expect(response.errorDetail?.contains("registration id") == true, "\(response.body)")
        }
    }

    @Test(arguments: [
        String(repeating: "!", count: 6000) + "a",
        String(repeating: "(", count: 2800) + "a" + String(repeating: ")", count: 2800),
        String(repeating: "(", count: 17) + "a" + String(repeating: ")", count: 17),
    ])
    func item3_deeplyNestedTagExpressionsAreRefused(expression: String) async throws {
        try await RouterHub.with { hub in
            let response = try await hub.raw(
                .POST, hub.baseURL + "/news/messages",
                headers: [
                    ("Authorization", hub.token(hub.full)), ("ServiceBusNotification-Format", "template"),
                    ("ServiceBusNotification-Tags", expression), ("Content-Type", "application/json"),
                ],
                body: #"{"messageParam":"x"}"#)
            #expect(response.status == 400, "\(response.body.prefix(200))")
            #expect(response.errorDetail?.contains("levels deep") == true)
            try await expectHealthy(hub)
        }
    }

    @Test func item10_theTrackingIdIsCheckedBeforeItIsEchoed() async throws {
        try await RouterHub.with { hub in
            let hostile = #"</Detail><Injected a="1"/>&"#
            let response = try await hub.raw(.GET, hub.baseURL + "/news/installations/none", headers: [("TrackingId", hostile)])
            #expect(response.status == 401)
            #expect(!response.body.contains("<Injected"))
            #expect(ServiceErrorBody(xml: response.body) != nil, "\(response.body)")
            #expect(response.headers.first(name: "TrackingId") != hostile)
            let fine = try await hub.raw(.GET, hub.baseURL + "/healthz", headers: [("TrackingId", "abc-123_x.y:z")])
            #expect(fine.headers.first(name: "TrackingId") == "abc-123_x.y:z")
        }
    }

    @Test func item10_bodiesHoldingNULAreRefused() async throws {
        try await RouterHub.with { hub in
            let response = try await hub.raw(
                .POST, hub.baseURL + "/news/messages",
                headers: [("Authorization", hub.token(hub.full)), ("ServiceBusNotification-Format", "gcm")],
                body: "{\"data\":\"a\u{0}b\"}")
            #expect(response.status == 400)
            #expect(response.errorDetail?.contains("U+0000") == true)
        }
    }

    @Test func attack_aFilteredListingPagesAcrossRegistrationsAndInstallations() async throws {
        try await RouterHub.with { hub in
            let device = randomDevice()
            for i in 0..<3 { try await hub.put(newsInstallation("s\(i)", device: device, tags: [])) }
            try await hub.put(Registration(kind: .appleNative, deviceToken: device, tags: ["World"]))
            var ids: [String] = []
            var token: String? = "0"
            while let next = token {
                let page = try await get(
                    hub, "/news/registrations?$filter=DeviceToken%20eq%20'\(device)'&$top=2&continuationtoken=\(next)")
                #expect(page.status == 200)
                let entries = try Registration.parseFeed(page.body)
                #expect(entries.count <= 2)
                ids += entries.compactMap(\.registrationId)
                token = page.headers.first(name: "x-ms-continuationtoken")
            }
            // One legacy registration, then each installation's native and template projection.
            #expect(ids.count == 7)
            #expect(Set(ids).count == 7)
        }
    }

    @Test func attack_controlCharactersInAnyBodyAreRefused() async throws {
        try await RouterHub.with { hub in
            let response = try await hub.raw(
                .POST, hub.baseURL + "/news/messages",
                headers: [("Authorization", hub.token(hub.full)), ("ServiceBusNotification-Format", "apple")],
                body: "{\"aps\":{\"alert\":\"a\u{1}b\"}}")
            #expect(response.status == 400)
            #expect(response.errorDetail?.contains("U+0001") == true)
        }
    }
}
