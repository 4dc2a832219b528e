import Foundation
import HubTestSupport
import LocalHub
import NIOHTTP1
import NotificationHubs
import Testing

/// Raw requests shaped as the official SDKs shape them (wire spec §3.2 and §12).
@Suite struct WireCompatibilityTests {
    static let body =
        #"{"installationId":"sdk-1","platform":"apns","pushChannel":"00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0","tags":["World"],"templates":{"simpleAPNSTemplate":{"body":"{\"aps\":{\"alert\":\"$(messageParam)\"}}"}}}"#

    /// .NET: sr is the full request URL, scheme forced to http, port dropped, trailing slash,
    /// lower-cased, lower-case hex; no x-ms-version; `&test`; PATCH as json-patch+json.
    @Test func dotNetShapedRequests() async throws {
        try await RouterHub.with { hub in
            let host = String(hub.baseURL.dropFirst("http://".count))
            let hostWithoutPort = host.split(separator: ":")[0]
            func token(_ cs: ConnectionString, path: String) -> String {
                let sr = PercentEncoding.encode("http://\(hostWithoutPort)/news/\(path)/".lowercased())
                return SharedAccessSignature.make(
                    encodedResource: sr, keyName: cs.keyName, key: cs.key, expiry: Int64(Date().timeIntervalSince1970) + 1200)
            }
            let put = try await hub.raw(
                .PUT, "\(hub.baseURL)/news/installations/sdk-1?api-version=2020-06",
                headers: [
                    ("Authorization", token(hub.full, path: "installations/sdk-1")), ("Content-Type", "application/json"),
                    ("TrackingId", "t-123"),
                ],
                body: Self.body)
            #expect(put.status == 200)
            #expect(put.headers.first(name: "TrackingId") == "t-123")
            #expect(put.body.isEmpty)
            let patch = try await hub.raw(
                .PATCH, "\(hub.baseURL)/news/installations/sdk-1?api-version=2020-06",
                headers: [
                    ("Authorization", token(hub.full, path: "installations/sdk-1")),
                    ("Content-Type", "application/json-patch+json"),
                ],
                body: #"[{"op":"add","path":"/tags","value":"Sports"},{"op":"remove","path":"/userId","value":null}]"#)
            #expect(patch.status == 200)
            let get = try await hub.raw(
                .GET, "\(hub.baseURL)/news/installations/sdk-1?api-version=2020-06",
                headers: [("Authorization", token(hub.full, path: "installations/sdk-1"))])
            #expect(get.status == 200)
            #expect(get.headers.first(name: "Content-Type")?.hasPrefix("application/json") == true)
            #expect(try Installation(jsonText: get.body.utf8).tags == ["World", "Sports"])
            let send = try await hub.raw(
                .POST, "\(hub.baseURL)/news/messages?api-version=2020-06&test",
                headers: [
                    ("Authorization", token(hub.full, path: "messages")), ("ServiceBusNotification-Format", "template"),
                    ("ServiceBusNotification-Tags", "World||Politics"), ("Content-Type", "application/json;charset=utf-8"),
                ],
                body: #"{"messageParam":"from .NET"}"#)
            #expect(send.status == 201)
            #expect(try NotificationOutcome(xml: send.body).success == 1)
            let delete = try await hub.raw(
                .DELETE, "\(hub.baseURL)/news/installations/sdk-1?api-version=2020-06",
                headers: [("Authorization", token(hub.full, path: "installations/sdk-1"))])
            #expect(delete.status == 204)
        }
    }

    /// JS: a namespace-scoped token with upper-case hex, x-ms-version, `messages/` with a
    /// trailing slash, `test=true`, PATCH as application/json, 201 required.
    @Test func javaScriptShapedRequests() async throws {
        try await RouterHub.with { hub in
            let sr = PercentEncoding.encode((hub.baseURL + "/").lowercased(), uppercaseHex: true)
            let expiry = Int64(Date().timeIntervalSince1970) + 3600
            let token = SharedAccessSignature.make(
                encodedResource: sr, keyName: hub.full.keyName, key: hub.full.key, expiry: expiry)
            let common = [
                ("Authorization", token), ("x-ms-version", "2020-06"),
                ("x-ms-azsdk-telemetry", "class=NotificationHubsServiceClient;method=send"),
            ]
            let put = try await hub.raw(
                .PUT, "\(hub.baseURL)/news/installations/sdk-1?api-version=2020-06",
                headers: common + [("Content-Type", "application/json")],
                body: Self.body)
            #expect(put.status == 200)
            let patch = try await hub.raw(
                .PATCH, "\(hub.baseURL)/news/installations/sdk-1?api-version=2020-06",
                headers: common + [("Content-Type", "application/json")],
                body: #"[{"op":"add","path":"/tags","value":"Science"}]"#)
            #expect(patch.status == 200)
            let send = try await hub.raw(
                .POST, "\(hub.baseURL)/news/messages/?api-version=2020-06&test=true",
                headers: common + [
                    ("ServiceBusNotification-Format", "template"), ("Content-Type", "application/json;charset=utf-8"),
                ],
                body: #"{"messageParam":"broadcast"}"#)
            #expect(send.status == 201)
            #expect(try NotificationOutcome(xml: send.body).success == 1)
            let plain = try await hub.raw(
                .POST, "\(hub.baseURL)/news/messages/?api-version=2020-06",
                headers: common + [
                    ("ServiceBusNotification-Format", "apple"), ("Content-Type", "application/json;charset=utf-8"),
                ],
                body: #"{"aps":{"alert":"native"}}"#)
            #expect(plain.status == 201)
            // JS reads the notification id as the fourth segment of the Location path.
            let location = try #require(plain.headers.first(name: "Location"))
            let path = try #require(URL(string: location)?.path)
            #expect(path.split(separator: "/", omittingEmptySubsequences: false).count == 4)
        }
    }

    /// iOS v3: sr is the full URL with its query, http, lower-cased.
    @Test func iOSShapedRequests() async throws {
        try await RouterHub.with { hub in
            let url = "\(hub.baseURL)/news/installations/sdk-1?api-version=2020-06"
            let sr = PercentEncoding.encode(url.lowercased())
            let token = SharedAccessSignature.make(
                encodedResource: sr, keyName: hub.listen.keyName, key: hub.listen.key,
                expiry: Int64(Date().timeIntervalSince1970) + 1200)
            let put = try await hub.raw(
                .PUT, url,
                headers: [
                    ("Authorization", token), ("x-ms-version", "2020-06"), ("Content-Type", "application/json"),
                    ("User-Agent", "NOTIFICATIONHUBS/2020-06(api-origin=IosSdkV3.1.5; os=iOS; os_version=17.0;)"),
                ],
                body: Self.body)
            #expect(put.status == 200)
        }
    }

    /// The Swift tutorial: a hub-scoped URL that was not lower-cased, api-version 2015-01,
    /// paths and query keys in other cases.
    @Test func tutorialShapedRequestsAndTolerance() async throws {
        try await RouterHub.with(hubs: ["NewsHub"]) { hub in
            let sr = PercentEncoding.encode(hub.baseURL + "/NewsHub")
            let token = SharedAccessSignature.make(
                encodedResource: sr, keyName: hub.full.keyName, key: hub.full.key,
                expiry: Int64(Date().timeIntervalSince1970) + 3600)
            let notFound = try await hub.raw(
                .GET, "\(hub.baseURL)/newshub/Installations/abc?API-Version=2015-01",
                headers: [("authorization", token), ("content-type", "application/json"), ("X-MS-VERSION", "2015-01")])
            #expect(notFound.status == 404)
            #expect(notFound.errorDetail?.hasPrefix("Installation not found") == true)
            #expect(notFound.headers.first(name: "Content-Type") == "application/xml; charset=utf-8")
            let rid = try await hub.raw(
                .POST, "\(hub.baseURL)/NEWSHUB/registrationIDs/?api-version=2013-04", headers: [("Authorization", token)])
            #expect(rid.status == 201)
            #expect(rid.headers.first(name: "Location")?.contains("/registrationids/") == true)
        }
    }

    @Test(arguments: ["2013-04", "2013-10", "2015-01", "2015-04", "2015-08", "2016-07", "2017-04", "2020-06"])
    func supportedApiVersions(version: String) async throws {
        try await RouterHub.with { hub in
            let response = try await hub.raw(
                .GET, "\(hub.baseURL)/news/installations/x?api-version=\(version)",
                headers: [("Authorization", hub.token(hub.listen))])
            #expect(response.status == 404)
        }
    }

    @Test(arguments: ["2012-01", "2021-01", "latest"])
    func unsupportedApiVersions(version: String) async throws {
        try await RouterHub.with { hub in
            let response = try await hub.raw(
                .GET, "\(hub.baseURL)/news/installations/x?api-version=\(version)",
                headers: [("Authorization", hub.token(hub.listen))])
            #expect(response.status == 400)
            #expect(response.errorDetail?.contains(version) == true)
        }
    }

    @Test func formatHeaderIsCaseInsensitive() async throws {
        try await RouterHub.with { hub in
            for format in ["Template", "APPLE", "fcmV1", "gcm"] {
                let body = format == "Template" ? #"{"m":"x"}"# : #"{"aps":{"alert":"x"}}"#
                let response = try await hub.raw(
                    .POST, "\(hub.baseURL)/news/messages",
                    headers: [
                        ("Authorization", hub.token(hub.full)), ("ServiceBusNotification-Format", format),
                        ("Content-Type", "application/json"),
                    ],
                    body: body)
                #expect(response.status == 201, "\(format): \(response.body)")
            }
        }
    }
}
