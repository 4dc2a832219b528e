import Foundation
import NotificationHubs
import Testing

/// Issue 10: the wire library's readers and writers against hostile input. Each of these
/// crashed, stalled, stored something that could not be read back, or let a control
/// character through before.
struct HostileInputTests {
    @Test(arguments: [
        String(repeating: "!", count: 6000) + "a",
        String(repeating: "(", count: 2800) + "a" + String(repeating: ")", count: 2800),
        String(repeating: "!(", count: 9) + "a" + String(repeating: ")", count: 9),
    ])
    func tagExpressionsNestedPast16LevelsAreRefused(text: String) {
        #expect(throws: TagExpressionError.self) { try TagExpression(parsing: text) }
    }

    @Test func sixteenLevelsOfNestingStillParse() throws {
        let deepest = String(repeating: "(", count: 8) + String(repeating: "!", count: 8) + "a" + String(repeating: ")", count: 8)
        #expect(try TagExpression(parsing: deepest).tags == ["a"])
        #expect(throws: TagExpressionError.self) {
            try TagExpression(parsing: String(repeating: "a||", count: 3000) + "a")
        }
    }

    /// Found by `make fuzz` (tag-expression): a parenthesised `&&` inside `&&` made a nested
    /// tree whose text read back as a flat one.
    @Test(arguments: ["!!!(a&&(a&&b)||cb)||c", "a&&(b&&c)", "(a||b)||(c||(d))", "((a))", "!(a&&b)&&(c&&!d)"])
    func anExpressionReadsBackFromItsText(text: String) throws {
        let expression = try TagExpression(parsing: text)
        #expect(try TagExpression(parsing: expression.description) == expression)
    }

    @Test func nestedGroupsOfOneOperatorAreOneGroup() throws {
        #expect(try TagExpression(parsing: "a&&(b&&c)") == .and([.tag("a"), .tag("b"), .tag("c")]))
        #expect(try TagExpression(parsing: "(a||b)||c") == .or([.tag("a"), .tag("b"), .tag("c")]))
        #expect(try TagExpression(parsing: "(a||b)&&c") == .and([.or([.tag("a"), .tag("b")]), .tag("c")]))
    }

    @Test(arguments: [
        ("<a>x&#0;y</a>", "&#0;"), ("<a>&#x1B;[2J</a>", "&#x1B;"), ("<a>\u{1}</a>", "U+0001"), ("<a b=\"\u{8}\"/>", "U+0008"),
        ("<a><![CDATA[\u{0}]]></a>", "U+0000"), ("<a>&#xFFFE;</a>", "U+FFFE"), ("<a>\u{FFFF}</a>", "U+FFFF"),
    ])
    func xmlRefusesCharactersItCannotHold(text: String, named: String) {
        do {
            _ = try XMLNode(parsing: text)
            Issue.record("accepted \(text.debugDescription)")
        } catch {
            #expect(error.description.contains(named), "\(error)")
        }
    }

    /// Found by `make fuzz` (xml): `&quot;` followed by a combining mark was not decoded,
    /// because as Characters `;` and the mark are one.
    @Test func entitiesBeforeCombiningMarksAreDecoded() throws {
        let text = "\"\u{329} <y>"
        let escaped = XMLNode.escape(text)
        #expect(try XMLNode(parsing: "<r a=\"\(escaped)\">\(escaped)</r>").text == text)
        #expect(try XMLNode(parsing: "<r>&amp;&#x301;&lt;&#809;</r>").text == "&\u{301}<\u{329}")
        #expect(throws: XMLParseError.self) { try XMLNode(parsing: "<r>&#+65;</r>") }
    }

    @Test func xmlStillTakesTabsLineBreaksAndEveryCharacter() throws {
        #expect(try XMLNode(parsing: "<a>&#9;&#10;&#13;&#x1F680;é\t\n</a>").text == "\t\n\r🚀é\t\n")
        // Error details quote what a client sent; what XML cannot hold becomes U+FFFD.
        #expect(XMLNode.escape("a\u{0}b\u{1B}<") == "a\u{FFFD}b\u{FFFD}&lt;")
    }

    @Test(arguments: [
        ("\u{0}", "U+0000"), ("\u{1B}]0;title\u{7}", "U+001B"), ("a\u{9B}b", "U+009B"), ("\u{7F}", "U+007F"),
        ("\u{FFFE}", "U+FFFE"),
    ])
    func storedTextRefusesControlCharacters(text: String, named: String) {
        #expect(throws: InstallationError.self) { try StoredText.check(text, field: "x") }
        #expect(StoredText.forbidden(in: "fine é 🗳️ 日本 \(text)") != nil)
        do { try StoredText.check(text, field: "the field") } catch { #expect(error.description.contains(named)) }
        #expect(StoredText.forbidden(in: "tab\tline\n", body: true) == nil)
    }

    @Test func registrationsAreCheckedFieldByField() throws {
        func registration(_ change: (inout Registration) -> Void) -> Registration {
            var r = Registration(
                kind: .appleTemplate, deviceToken: "AB12", tags: ["World"], bodyTemplate: #"{"aps":{"alert":"$(m)"}}"#,
                templateName: "t")
            change(&r)
            return r
        }
        _ = try registration { _ in }.validatedForStorage()
        let cases: [(String, (inout Registration) -> Void)] = [
            ("Priority", { $0.priority = "1\u{0}0" }),
            ("Expiry", { $0.expiry = "2030\u{0}" }),
            ("TemplateName", { $0.templateName = "t\u{0}" }),
            ("ApnsHeader apns-id", { $0.apnsHeaders = ["apns-id": "a\u{0}"] }),
            ("ApnsHeader name", { $0.apnsHeaders = ["bad name": "x"] }),
            ("registration id", { $0.registrationId = "a\r\nb" }),
            ("push variable", { $0.pushVariables = ["k": "\u{1B}[2J"] }),
        ]
        for (field, change) in cases {
            do {
                _ = try registration(change).validatedForStorage()
                Issue.record("accepted a bad \(field)")
            } catch {
                #expect(error.description.contains(field), "\(field): \(error)")
            }
        }
    }

    @Test func installationIdsAndTemplatesWithControlCharactersAreRefused() throws {
        var installation = Installation(
            installationId: "i", platform: .apns, pushChannel: "AB12",
            templates: ["t\u{0}": InstallationTemplate(body: #"{"aps":{}}"#)])
        #expect(throws: InstallationError.self) { try installation.validatedForStorage(lastUpdate: "x") }
        installation.templates = ["t": InstallationTemplate(body: #"{"aps":{}}"#, headers: ["apns-id": "\u{9B}"])]
        #expect(throws: InstallationError.self) { try installation.validatedForStorage(lastUpdate: "x") }
        installation.templates = nil
        installation.installationId = "a\u{0}b"
        #expect(throws: InstallationError.self) { try installation.validatedForStorage(lastUpdate: "x") }
    }

    @Test func anSSEStreamCannotGrowTheBufferWithoutBound() throws {
        var parser = ServerSentEventParser()
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 64 * 1024)
        var refused = false
        for _ in 0..<40 {
            do { _ = try parser.feed(chunk) } catch {
                refused = true
                break
            }
        }
        #expect(refused)
        // Many data lines that never end an event are refused too.
        var lines = ServerSentEventParser()
        let line = Array(("data: " + String(repeating: "b", count: 1000) + "\n").utf8)
        #expect(throws: BuiltInPushError.self) {
            for _ in 0..<2000 { _ = try lines.feed(line) }
        }
        // An ordinary stream still reads.
        var ok = ServerSentEventParser()
        #expect(try ok.feed(Array("id: 1\ndata: x\n\n".utf8)).map(\.data) == ["x"])
    }

    @Test func jsonOutputCarriesNoControlCharacter() throws {
        let text = "a\u{1B}]0;x\u{7}b\u{7F}c\u{9B}2Jd é\u{A0}"
        let json = JSONValue.string(text).text
        #expect(json == #""a\u001b]0;x\u0007b\u007fc\u009b2Jd é\#u{A0}""#)
        #expect(try JSONValue(parsing: json) == .string(text))
    }

    @Test func tokenLifetimesAreClippedAndLongTokensRefused() throws {
        let token = SharedAccessSignature.make(
            resource: "http://h/hub", keyName: "k", key: "v", lifetime: 9_223_372_036_854_775_000)
        #expect(token.contains("se=\(SharedAccessSignature.latestExpiry)&"))
        let long = SharedAccessSignature.prefix + "sr=" + String(repeating: "a", count: 5000) + "&sig=x&se=1&skn=k"
        #expect(throws: SASVerificationError.self) { try SharedAccessToken(parsing: long) }
    }
}
