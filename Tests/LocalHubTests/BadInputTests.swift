import Foundation
import HubTestSupport
import LocalHub
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

/// Bad input gets a 4xx with the service's XML error naming the problem, nothing is half
/// written, and the hub stays up.
@Suite struct BadInputTests {
    static let template = #"{\"aps\":{\"alert\":\"$(messageParam)\"}}"#

    @Test(arguments: [
        ("{not json", "invalid JSON"),
        (#"{"installationId":"x","platform":"symbian","pushChannel":"AB"}"#, "symbian"),
        (#"{"installationId":"x","platform":"apns","pushChannel":"AB","tags":["has space"]}"#, "invalid tag"),
        (
            #"{"installationId":"x","platform":"apns","pushChannel":"AB","tags":["\#(String(repeating: "t", count: 121))"]}"#,
            "121"
        ),
        (
            #"{"installationId":"x","platform":"apns","pushChannel":"AB","tags":[\#((0...60).map { "\"t\($0)\"" }.joined(separator: ","))]}"#,
            "61 tags"
        ),
        (#"{"installationId":"other","platform":"apns","pushChannel":"AB"}"#, "does not match"),
        (#"{"installationId":"x","platform":"apns","pushChannel":"not-hex"}"#, "hexadecimal"),
        (#"{"installationId":"x","platform":"apns","pushChannel":"ab\r\ncd\u001b[2J"}"#, "'ab??cd?[2J'"),
        (
            #"{"installationId":"x","platform":"apns","pushChannel":"AB","templates":{"t":{"body":"{\"a\":\"{$(p) + #(q)}\"}"}}}"#,
            "concatenated"
        ),
    ])
    func badInstallationsAre400(body: String, words: String) async throws {
        try await RouterHub.with { hub in
            let response = try await hub.raw(
                .PUT, hub.baseURL + "/news/installations/x",
                headers: [("Authorization", hub.token(hub.listen)), ("Content-Type", "application/json")],
                body: body)
            #expect(response.status == 400, "\(response.body)")
            #expect(response.errorDetail?.contains(words) == true, "\(response.body)")
            #expect(!response.body.contains("\n") && !response.body.contains("\r"), "one line: \(response.body)")
            // Nothing was written and the hub still answers.
            let get = try await hub.raw(
                .GET, hub.baseURL + "/news/installations/x", headers: [("Authorization", hub.token(hub.listen))])
            #expect(get.status == 404)
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func aBadPatchChangesNothing() async throws {
        try await TestHub.with { hub in
            let client = try hub.client(hub.listen)
            try await client.createOrUpdateInstallation(newsInstallation("p", device: "AB", tags: ["World"]))
            for body in [
                #"[{"op":"add","path":"/tags","value":"ok"},{"op":"add","path":"/tags","value":"not ok"}]"#, "nope",
                #"[{"op":"add"}]"#,
            ] {
                let response = try await raw(
                    .PATCH, hub.baseURL + "/news/installations/p", headers: [("Authorization", hub.token(hub.listen))], body: body
                )
                #expect(response.status == 400, "\(body)")
            }
            #expect(try await client.installation(id: "p").tags == ["World"])
        }
    }

    @Test func sendErrorsNameTheProblem() async throws {
        try await RouterHub.with { hub in
            let token = hub.token(hub.full)
            let cases: [([(String, String)], String, String, Int)] = [
                ([], #"{"a":"b"}"#, "ServiceBusNotification-Format", 400),
                ([("ServiceBusNotification-Format", "carrier-pigeon")], #"{"a":"b"}"#, "carrier-pigeon", 400),
                (
                    [
                        ("ServiceBusNotification-Format", "template"),
                        ("ServiceBusNotification-Tags", "a && b && c && d && e && f && g"),
                    ], #"{"a":"b"}"#, "7 tags", 400
                ),
                (
                    [("ServiceBusNotification-Format", "template"), ("ServiceBusNotification-Tags", "a ||| b")], #"{"a":"b"}"#,
                    "column", 400
                ),
                ([("ServiceBusNotification-Format", "template")], #"{"a":{"b":1}}"#, "string", 400),
                ([("ServiceBusNotification-Format", "template")], #"not json"#, "JSON", 400),
                (
                    [("ServiceBusNotification-Format", "template"), ("Content-Type", "application/xml")], #"{"a":"b"}"#,
                    "Content-Type", 400
                ),
                (
                    [("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-DeviceHandle", "AB")], #"{"aps":{}}"#,
                    "direct", 400
                ),
            ]
            for (headers, body, words, status) in cases {
                let response = try await hub.raw(
                    .POST, hub.baseURL + "/news/messages", headers: [("Authorization", token)] + headers, body: body)
                #expect(response.status == status, "\(words): \(response.body)")
                #expect(response.errorDetail?.contains(words) == true, "\(words): \(response.body)")
            }
            let direct: [(String, String)] = [("Authorization", token), ("ServiceBusNotification-Format", "apple")]
            let noHandle = try await hub.raw(.POST, hub.baseURL + "/news/messages?direct", headers: direct, body: #"{"aps":{}}"#)
            #expect(noHandle.status == 400)
            let withTags = try await hub.raw(
                .POST, hub.baseURL + "/news/messages?direct=true",
                headers: direct + [("ServiceBusNotification-DeviceHandle", "AB"), ("ServiceBusNotification-Tags", "World")],
                body: #"{"aps":{}}"#)
            #expect(withTags.status == 400)
            #expect(withTags.errorDetail?.contains("cannot also have") == true)
        }
    }

    @Test func bodiesOver64KBAre413() async throws {
        try await RouterHub.with { hub in
            let big = #"{"messageParam":""# + String(repeating: "x", count: 70_000) + #""}"#
            let response = try await hub.raw(
                .POST, hub.baseURL + "/news/messages",
                headers: [
                    ("Authorization", hub.token(hub.full)), ("ServiceBusNotification-Format", "template"),
                    ("Content-Type", "application/json"),
                ],
                body: big)
            #expect(response.status == 413)
            let health = try await hub.raw(.GET, hub.baseURL + "/healthz")
            #expect(health.status == 200)
        }
    }

    @Test func unknownHubsAndPathsAre404() async throws {
        try await RouterHub.with { hub in
            let nohub = try await hub.raw(
                .GET, hub.baseURL + "/nohub/installations/x", headers: [("Authorization", hub.token(hub.listen))])
            #expect(nohub.status == 404)
            #expect(nohub.errorDetail?.contains("nohub") == true)
            let nopath = try await hub.raw(
                .GET, hub.baseURL + "/news/whatever", headers: [("Authorization", hub.token(hub.listen))])
            #expect(nopath.status == 404)
        }
    }

    /// A refusal names what it refused, but never echoes a header of any length back.
    @Test func aResumePointThatIsNoNumberIsRefusedWithoutEchoingItWhole() async throws {
        try await RouterHub.with { hub in
            let device = String(repeating: "ab", count: 32)
            let path = hub.baseURL + "/_sandbox/apns/news/devices/\(device)"
            let listen = ("Authorization", hub.token(hub.listen))
            let claimed = try await hub.raw(.PUT, path, headers: [listen])
            #expect(claimed.status < 300)
            let secret = (BuiltInPushDelivery.claimSecretHeader, ClaimTests.secret(of: claimed) ?? "")
            let refused = try await hub.raw(
                .GET, path + "/stream", headers: [listen, secret, ("Last-Event-ID", String(repeating: "9", count: 10_000))])
            #expect(refused.status == 400)
            #expect(refused.body.contains("'\(String(repeating: "9", count: 40))'"), "\(refused.body.prefix(300))")
            #expect(refused.body.count < 1_000, "\(refused.body.count) bytes")
        }
    }

    @Test func garbageRequestsNeverTakeTheHubDown() async throws {
        try await RouterHub.with { hub in
            let token = hub.token(hub.full)
            let paths = [
                "/news/installations/%ZZ", "/news/messages/$batch", "/_sandbox/apns/news/devices/zz/stream", "/_sandbox/x",
                "/news/registrations/x",
            ]
            for path in paths {
                for method in [HTTPMethod.GET, .PUT, .POST, .DELETE, .PATCH] {
                    let response = try await hub.raw(
                        method, hub.baseURL + path, headers: [("Authorization", token)], body: "\u{0}\u{FFFF}{[<")
                    #expect(response.status < 500, "\(method) \(path) → \(response.status): \(response.body)")
                }
            }
            #expect(try await hub.raw(.GET, hub.baseURL + "/healthz").status == 200)
        }
    }
}
