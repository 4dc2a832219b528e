import Foundation
import NotificationHubs
import Testing

struct InstallationTests {
    /// A .NET SDK body: explicit nulls, `userID` spelled as in the docs, iOS-style offset.
    static let dotNetBody = #"""
        {"installationId":"abc-1","userID":"user@x","platform":"APNS","pushChannel":"62BCD348A8FA",
         "pushChannelExpired":null,"expirationTime":"2025-01-31T10:20+0000","tags":["World","Sports"],
         "pushVariables":null,"templates":{"simpleAPNSTemplate":{"body":"{\"aps\":{\"alert\":\"$(messageParam)\"}}","headers":null,"expiry":null,"tags":null}},
         "secondaryTiles":null}
        """#

    @Test func toleratesNullsMixedCaseAndOffsets() throws {
        let installation = try Installation(jsonText: Self.dotNetBody.utf8)
        #expect(installation.installationId == "abc-1")
        #expect(installation.userId == "user@x")
        #expect(installation.platform == .apns)
        #expect(installation.pushChannel == .handle("62BCD348A8FA"))
        #expect(installation.pushVariables == nil)
        #expect(installation.templates?["simpleAPNSTemplate"]?.body == #"{"aps":{"alert":"$(messageParam)"}}"#)
        let stored = try installation.validatedForStorage(lastUpdate: "2026-01-01T00:00:00.0000000Z")
        #expect(stored.expirationTime == "2025-01-31T10:20:00.0000000Z")
        #expect(stored.templates?["simpleAPNSTemplate"]?.tags == ["simpleAPNSTemplate"])
        #expect(stored.pushChannelExpired == false)
    }

    @Test func encodesInTheServiceOrder() throws {
        var installation = Installation(
            installationId: "id1", platform: .apns, pushChannel: "AB12", tags: ["World"],
            templates: ["simpleAPNSTemplate": InstallationTemplate(body: #"{"aps":{"alert":"$(messageParam)"}}"#)])
        installation = try installation.validatedForStorage(lastUpdate: "x")
        installation.lastUpdate = nil
        #expect(
            installation.json.text
                == #"{"installationId":"id1","pushChannel":"AB12","pushChannelExpired":false,"platform":"apns","expirationTime":"9999-12-31T23:59:59.9999999Z","tags":["World"],"templates":{"simpleAPNSTemplate":{"body":"{\"aps\":{\"alert\":\"$(messageParam)\"}}","tags":["simpleAPNSTemplate"]}}}"#
        )
        // And reads back to the same value.
        #expect(try Installation(json: installation.json) == installation)
    }

    @Test func browserPushChannelObject() throws {
        let i = try Installation(
            jsonText:
                #"{"installationId":"b","platform":"browser","pushChannel":{"endpoint":"https://e","p256dh":"k","auth":"a"}}"#
                .utf8)
        #expect(i.pushChannel == .browser(endpoint: "https://e", p256dh: "k", auth: "a"))
    }

    @Test(arguments: [
        (#"{"platform":"apns","pushChannel":"AB"}"#, "installationId"),
        (#"{"installationId":"a","pushChannel":"AB"}"#, "platform"),
        (#"{"installationId":"a","platform":"nokia","pushChannel":"AB"}"#, "nokia"),
        (#"{"installationId":"a","platform":"apns","pushChannel":"AB","tags":"World"}"#, "tags"),
        (#"{"installationId":"a","platform":"apns","pushChannel":7}"#, "pushChannel"),
        (#"["not an object"]"#, "object"),
        (#"{"installationId":"a""#, "JSON"),
    ])
    func malformedInstallationsSayWhy(body: String, words: String) {
        do {
            _ = try Installation(jsonText: body.utf8)
            Issue.record("accepted \(body)")
        } catch {
            #expect(error.description.contains(words), "\(error)")
        }
    }

    @Test(arguments: [
        (#"{"installationId":"a","platform":"apns","pushChannel":"XYZ"}"#, "hexadecimal"),
        (#"{"installationId":"a","platform":"apns","pushChannel":"ABC"}"#, "hexadecimal"),
        (#"{"installationId":"a","platform":"apns"}"#, "pushChannel"),
        (#"{"installationId":"a b","platform":"apns","pushChannel":"AB"}"#, "installationId"),
        (#"{"installationId":"a","platform":"apns","pushChannel":"AB","tags":["bad tag"]}"#, "invalid tag"),
        (#"{"installationId":"a","platform":"apns","pushChannel":"AB","tags":["$InstallationId:{a}"]}"#, "system tag"),
        (
            #"{"installationId":"a","platform":"apns","pushChannel":"AB","templates":{"t":{"body":"{\"a\":\".(x)\"}"}}}"#,
            "template 't'"
        ),
        (#"{"installationId":"a","platform":"apns","pushChannel":"AB","templates":{"t":{"body":"nope"}}}"#, "not valid JSON"),
        (#"{"installationId":"a","platform":"apns","pushChannel":"AB","templates":{"t":{}}}"#, "no body"),
        (#"{"installationId":"a","platform":"apns","pushChannel":"AB","expirationTime":"soon"}"#, "expirationTime"),
    ])
    func storageValidationSaysWhy(body: String, words: String) throws {
        let installation = try Installation(jsonText: body.utf8)
        do {
            _ = try installation.validatedForStorage(lastUpdate: "x")
            Issue.record("accepted \(body)")
        } catch {
            #expect(error.description.contains(words), "\(error)")
        }
    }

    @Test func sixtyOneTagsAreTooMany() throws {
        let installation = Installation(installationId: "a", platform: .apns, pushChannel: "AB", tags: (0...60).map { "t\($0)" })
        #expect(throws: InstallationError.self) { try installation.validatedForStorage(lastUpdate: "x") }
    }

    @Test func effectiveTagsIncludeSystemTags() {
        let installation = Installation(installationId: "a", platform: .apns, pushChannel: "AB", tags: ["World"], userId: "u")
        #expect(installation.effectiveTags == ["World", "$InstallationId:{a}", "$UserId:{u}"])
    }

    // MARK: JSON-Patch

    func patched(_ operations: String, _ start: Installation = InstallationTests.base) throws -> Installation {
        var installation = start
        try installation.apply(InstallationPatchOperation.parseDocument(JSONValue(parsing: operations)))
        return installation
    }

    static let base = Installation(
        installationId: "p", platform: .apns, pushChannel: "AA", tags: ["World"],
        templates: ["t": InstallationTemplate(body: #"{"aps":{"alert":"$(m)"}}"#, tags: ["t"])])

    @Test func patchAddsTagsFromAStringOrAStringifiedArray() throws {
        #expect(try patched(#"[{"op":"add","path":"/tags","value":"Sports"}]"#).tags == ["World", "Sports"])
        #expect(
            try patched(#"[{"op":"add","path":"/tags","value":"[\"Sports\",\"World\",\"Science\"]"}]"#).tags == [
                "World", "Sports", "Science",
            ])
        #expect(try patched(#"[{"op":"add","path":"/tags","value":["Sports"]}]"#).tags == ["World", "Sports"])
    }

    @Test func patchRemovesOneTagAndTheLastRemovesTheProperty() throws {
        #expect(try patched(#"[{"op":"remove","path":"/tags/World","value":null}]"#).tags == nil)
    }

    @Test func patchReplacesPushChannelAndClearsExpiry() throws {
        var start = Self.base
        start.pushChannelExpired = true
        let result = try patched(#"[{"op":"replace","path":"/pushChannel","value":"BB"}]"#, start)
        #expect(result.pushChannel == .handle("BB"))
        #expect(result.pushChannelExpired == false)
    }

    @Test func patchUserAndTemplates() throws {
        let result = try patched(
            #"""
            [{"op":"add","path":"/userId","value":"u1"},
             {"op":"add","path":"/templates/second","value":"{\"body\":\"{\\\"a\\\":\\\"$(b)\\\"}\",\"tags\":[\"x\"]}"},
             {"op":"replace","path":"/templates/t/body","value":"{\"aps\":{\"alert\":\"$(n)\"}}"},
             {"op":"add","path":"/templates/t/tags","value":"extra"}]
            """#)
        #expect(result.userId == "u1")
        #expect(result.templates?["second"]?.body == #"{"a":"$(b)"}"#)
        #expect(result.templates?["t"]?.body == #"{"aps":{"alert":"$(n)"}}"#)
        #expect(result.templates?["t"]?.tags == ["t", "extra"])
        #expect(try patched(#"[{"op":"remove","path":"/templates/t"}]"#).templates == nil)
        #expect(try patched(#"[{"op":"remove","path":"/userId"}]"#, result).userId == nil)
    }

    @Test func aFailingPatchChangesNothing() throws {
        var installation = Self.base
        #expect(throws: InstallationError.self) {
            try installation.apply([.add("/tags", "Sports"), .add("/platform", "wns")])
        }
        #expect(installation == Self.base)
    }

    @Test(arguments: [
        #"[{"op":"move","path":"/tags","value":"a"}]"#,
        #"[{"op":"add","path":"tags","value":"a"}]"#,
        #"[{"op":"add","path":"/tags"}]"#,
        #"{"op":"add","path":"/tags","value":"a"}"#,
        #"[{"op":"add","path":"/templates/none/body","value":"{}"}]"#,
        #"[{"op":"add","path":"/templates/x","value":"not json"}]"#,
        #"[{"op":"remove","path":"/pushChannel"}]"#,
    ])
    func badPatchesAreRefused(body: String) {
        #expect(throws: InstallationError.self) { try patched(body) }
    }

    // MARK: Dates

    @Test(arguments: [
        ("2018-11-07T16:18:32.6641371-08:00", "2018-11-08T00:18:32.6641371Z"),
        ("2025-01-31T10:20+0000", "2025-01-31T10:20:00.0000000Z"),
        ("2030-06-01T00:00:00Z", "2030-06-01T00:00:00.0000000Z"),
        ("11/07/2018 16:18:32", "2018-11-07T16:18:32.0000000Z"),
        ("9999-12-31T23:59:59.9999999Z", "9999-12-31T23:59:59.9999999Z"),
        ("2030-06-01", "2030-06-01T00:00:00.0000000Z"),
    ])
    func w3cDatesNormalise(text: String, expected: String) {
        #expect(W3CDate.normalize(text) == expected)
    }

    @Test(arguments: [
        (0.0, "1970-01-01T00:00:00.0000000Z"),
        (-1.5, "1969-12-31T23:59:58.5000000Z"),
        (1_700_000_000.25, "2023-11-14T22:13:20.2500000Z"),
        (-62_167_219_200.0, "0000-01-01T00:00:00.0000000Z"),
        (253_402_300_800.0, "10000-01-01T00:00:00.0000000Z"),
    ])
    func w3cDatesFormat(seconds: Double, expected: String) {
        #expect(W3CDate.format(Date(timeIntervalSince1970: seconds)) == expected)
    }

    @Test(arguments: [
        "2030-01-01T10:00:00Z", " 2030-01-01T10:00:00Z", "2030-01-01T10:00:00Z\t", "\u{A0}2030-01-01T10:00:00Z\u{2003}",
        "  2030-01-01T10:00:00.000Z ",
    ])
    func datesParseWithBlankEnds(text: String) {
        #expect(W3CDate.parse(text) == Date(timeIntervalSince1970: 1_893_492_000))
    }

    @Test(arguments: [
        "soon", "2030-13-01", "2030-01-01T25:00", "2030-01-01T10:00:00Zjunk", "", " ", "\u{A0}",
        // Years whose seconds overflow: the .NET form takes any number of digits (a crash before).
        "01/01/10000000000000 00:00:00", "01/01/9223372036854775807 00:00:00", "01/01/0 00:00:00",
        "01/01/-5 00:00:00",
    ])
    func badDatesDoNotParse(text: String) {
        #expect(W3CDate.parse(text) == nil)
    }
}
