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

    @Test func badPagingParametersAreRefusedAndAContinuationPastTheEndIsAnswered() async throws {
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
    func registrationIdsWithControlCharactersOrSpacesAreRefused(id: String) async throws {
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
    func deeplyNestedTagExpressionsAreRefused(expression: String) async throws {
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

    @Test func theTrackingIdIsCheckedBeforeItIsEchoed() async throws {
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

    @Test func bodiesHoldingNULAreRefused() async throws {
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

    @Test func aFullHubRefusesANewInstallationButTakesChangesAndRoomFreedByADelete() async throws {
        try await RouterHub.with(configure: { $0.maximumInstallationsPerHub = 3 }) { hub in
            for i in 0..<3 { try await hub.put(newsInstallation("q\(i)", device: randomDevice(), tags: [])) }
            let refused = try await hub.putting(newsInstallation("q3", device: randomDevice(), tags: []))
            #expect(refused.status == 403)
            // Changing one that exists is fine; so is adding after a delete.
            try await hub.put(newsInstallation("q0", device: randomDevice(), tags: ["World"]))
            #expect([200, 204].contains(try await hub.installationCall(.DELETE, "q1").status))
            try await hub.put(newsInstallation("q3", device: randomDevice(), tags: []))
        }
    }

    @Test func idsThatDifferOnlyInCaseAreRefused() async throws {
        try await RouterHub.with { hub in
            let owner = hub.full
            #expect(
                [200, 201].contains(
                    try await hub.putting(newsInstallation("dev1", device: randomDevice(), tags: ["World"]), as: owner).status))
            let conflict = try await hub.putting(newsInstallation("DEV1", device: randomDevice(), tags: []), as: owner)
            #expect(conflict.status == 409)
            // A token scoped to dev1 is accepted for DEV1 (audiences ignore case, §3.3), but
            // there is no DEV1 to open.
            let scoped = hub.token(hub.listen, resource: hub.baseURL + "/news/installations/dev1")
            #expect(try await get(hub, "/news/installations/DEV1", token: scoped).status == 404)
            #expect(try await get(hub, "/news/installations/dev1", token: scoped).status == 200)
            let entry = Self.templateEntry.replacingOccurrences(of: "FIELDS", with: "")
            let headers = [("Authorization", hub.token(hub.listen)), ("Content-Type", "application/atom+xml")]
            #expect(
                try await hub.raw(.PUT, hub.baseURL + "/news/registrations/abc-1", headers: headers, body: entry).status == 200)
            #expect(
                try await hub.raw(.PUT, hub.baseURL + "/news/registrations/ABC-1", headers: headers, body: entry).status == 409)
        }
    }

    @Test func attack_systemTagsCannotBeClaimedByRegistrationsOrTemplates() async throws {
        try await RouterHub.with { hub in
            let headers = [("Authorization", hub.token(hub.listen)), ("Content-Type", "application/atom+xml")]
            for tag in ["$InstallationId:{victim}", "$UserId:{someone}"] {
                let entry = Self.templateEntry.replacingOccurrences(of: "<Tags>World</Tags>", with: "<Tags>World,\(tag)</Tags>")
                    .replacingOccurrences(of: "FIELDS", with: "")
                let response = try await hub.raw(.POST, hub.baseURL + "/news/registrations", headers: headers, body: entry)
                #expect(response.status == 400, "\(tag): \(response.body)")
                #expect(response.errorDetail?.contains("system tag") == true)
            }
            var thief = newsInstallation("thief", device: randomDevice(), tags: [])
            thief.templates?["simpleAPNSTemplate"]?.tags = ["$InstallationId:{victim}"]
            let refused = try await hub.putting(thief)
            #expect(refused.status == 400)
        }
    }

    @Test func attack_whatAHubHoldsIsBoundedInBytes() async throws {
        try await RouterHub.with(configure: { $0.maximumBytesPerHub = 48 * 1024 }) { hub in
            func big(_ id: String, _ kilobytes: Int) -> Installation {
                var installation = newsInstallation(id, device: randomDevice(), tags: [])
                installation.pushVariables = ["pad": String(repeating: "p", count: kilobytes * 1024)]
                return installation
            }
            for i in 0..<4 { try await hub.put(big("b\(i)", 10)) }
            let refused = try await hub.putting(big("b4", 10))
            #expect(refused.status == 403)
            #expect(refused.errorDetail?.contains("48 KB") == true)
            // Growing one that exists counts too, by PUT or by PATCH; deleting gives the room back.
            #expect(![200, 201].contains(try await hub.putting(big("b0", 20)).status))
            let patch = [
                InstallationPatchOperation(
                    op: .add, path: "/pushVariables/more", value: .string(String(repeating: "m", count: 10_240)))
            ]
            let patched = try await hub.installationCall(
                .PATCH, "b0", contentType: "application/json-patch+json", body: JSONValue.array(patch.map(\.json)).text)
            #expect(patched.status == 403)
            let kept = try await hub.installationCall(.GET, "b0")
            #expect(kept.status == 200)
            #expect(try Installation(jsonText: kept.body.utf8).pushVariables?["more"] == nil)
            #expect([200, 204].contains(try await hub.installationCall(.DELETE, "b1").status))
            try await hub.put(big("b4", 10))
        }
    }
}
