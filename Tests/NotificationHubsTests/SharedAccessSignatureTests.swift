import Foundation
import NotificationHubs
import Testing

/// Vectors computed independently (Python's hmac) for the key below and se = 1893456000.
struct SharedAccessSignatureTests {
    static let key = "5Hn9ibkZ4l/kpgQL4Ic0IvlW4lnq9N9LO1gAwM2RD0g="
    static let before = Date(timeIntervalSince1970: 1_800_000_000)
    static let verifier = SASVerifier(rules: [
        AuthorizationRule(name: AuthorizationRule.fullRuleName, primaryKey: key, rights: .full),
        AuthorizationRule(name: AuthorizationRule.listenRuleName, primaryKey: "otherKey=", rights: .listen),
    ])

    static func token(sr: String, sig: String, se: String = "1893456000", skn: String = AuthorizationRule.fullRuleName) -> String
    {
        "SharedAccessSignature sr=\(sr)&sig=\(sig)&se=\(se)&skn=\(skn)"
    }

    /// .NET: full request URL forced to http, trailing slash, lower-cased, lower-case hex.
    static let dotNet = token(
        sr: "http%3a%2f%2fns.servicebus.windows.net%2fhub%2finstallations%2fabc%2f",
        sig: "RCRXGNTDepN9xq6AlYg6xacUIkWUd5kLIuupbOj3f4o%3d")
    /// JS: the namespace root, encodeURIComponent (upper-case hex).
    static let javaScript = token(
        sr: "https%3A%2F%2Fns.servicebus.windows.net%2F", sig: "2ngTnq1fglj0vTZyql2N8rpy1pxe9%2B1KTJGA6s%2FTlpc%3D")
    /// iOS v3: full URL including the query, http, everything lower-cased.
    static let iOS = token(
        sr: "http%3a%2f%2fns.servicebus.windows.net%2fhub%2finstallations%2fabc%3fapi-version%3d2020-06",
        sig: "etksLAiAcT3mMkmDgdSlAanJFXkctH9m4slJP5Wkb8Q%3d")
    /// The Swift tutorial: the hub URL, not lower-cased.
    static let tutorial = token(
        sr: "https%3a%2f%2fns.servicebus.windows.net%2fMyHub", sig: "TnGVC5jeEe80%2Bbi9JPyAG35FRxODfKcelxXKnHbSoD4%3D")

    @Test(arguments: [
        ("dotNet", dotNet, "/hub/installations/abc"),
        ("javaScript", javaScript, "/hub/messages/"),
        ("javaScript", javaScript, "/otherhub/installations/x"),
        ("iOS", iOS, "/hub/installations/abc"),
        ("tutorial", tutorial, "/myhub/installations/abc"),
        ("tutorial", tutorial, "/MyHub/messages"),
    ])
    func sdkShapedTokensVerify(name: String, token: String, path: String) throws {
        let rule = try Self.verifier.verify(header: token, host: "ns.servicebus.windows.net:443", path: path, now: Self.before)
        #expect(rule.name == AuthorizationRule.fullRuleName, "\(name)")
    }

    @Test func fieldsInAnyOrderVerify() throws {
        let reordered =
            "SharedAccessSignature sig=RCRXGNTDepN9xq6AlYg6xacUIkWUd5kLIuupbOj3f4o%3d&se=1893456000&skn=DefaultFullSharedAccessSignature&sr=http%3a%2f%2fns.servicebus.windows.net%2fhub%2finstallations%2fabc%2f"
        let rule = try Self.verifier.verify(
            header: reordered, host: "NS.servicebus.windows.net", path: "/hub/installations/abc", now: Self.before)
        #expect(rule.name == AuthorizationRule.fullRuleName)
    }

    @Test func madeTokenHasTheTutorialShape() throws {
        let token = SharedAccessSignature.make(
            resource: "https://ns.servicebus.windows.net/MyHub", keyName: AuthorizationRule.fullRuleName, key: Self.key,
            lifetime: 93_456_000, now: Self.before)
        // sr lower-cased and encoded with lower-case hex; sig encoded; se = now + lifetime.
        #expect(
            token
                == "SharedAccessSignature sr=https%3a%2f%2fns.servicebus.windows.net%2fmyhub&sig=MUseY64ZZguEWhSvphqyhmYszflX%2bhkvItfGQgUebo4%3d&se=1893456000&skn=DefaultFullSharedAccessSignature"
        )
        _ = try Self.verifier.verify(header: token, host: "ns.servicebus.windows.net", path: "/myhub/messages", now: Self.before)
    }

    @Test func tamperedSignatureFails() {
        let tampered = Self.dotNet.replacingOccurrences(of: "sig=RCRX", with: "sig=RCRY")
        #expect(reason(tampered, path: "/hub/installations/abc") == .invalidSignature)
    }

    @Test func tamperedResourceFails() {
        // Re-scoping a valid signature to another hub breaks the HMAC.
        let tampered = Self.javaScript.replacingOccurrences(of: "windows.net%2F&", with: "windows.net%2Fother%2F&")
        #expect(reason(tampered, path: "/other/messages") == .invalidSignature)
    }

    @Test func tamperedExpiryFails() {
        let tampered = Self.dotNet.replacingOccurrences(of: "se=1893456000", with: "se=1993456000")
        #expect(reason(tampered, path: "/hub/installations/abc") == .invalidSignature)
    }

    @Test func expiredTokenFails() {
        let later = Date(timeIntervalSince1970: 1_893_456_000 + 3600)
        #expect(reason(Self.dotNet, path: "/hub/installations/abc", now: later) == .expired)
    }

    @Test func tokenWithinClockSkewIsAccepted() throws {
        let justAfter = Date(timeIntervalSince1970: 1_893_456_000 + 10)
        let rule = try Self.verifier.verify(
            header: Self.dotNet, host: "ns.servicebus.windows.net", path: "/hub/installations/abc", now: justAfter)
        #expect(rule.name == AuthorizationRule.fullRuleName)
    }

    @Test(arguments: [
        (dotNet, "/hub/installations/other"),
        (dotNet, "/hub/messages"),
        (tutorial, "/myhubx/messages"),
        (tutorial, "/other/messages"),
    ])
    func wrongAudienceFails(token: String, path: String) {
        #expect(reason(token, path: path) == .invalidAudience)
    }

    @Test func wrongHostFails() {
        #expect(reason(Self.tutorial, path: "/myhub/messages", host: "other.servicebus.windows.net") == .invalidAudience)
    }

    @Test func unknownKeyFails() {
        let unknown = Self.dotNet.replacingOccurrences(
            of: "skn=DefaultFullSharedAccessSignature", with: "skn=RootManageSharedAccessKey")
        #expect(reason(unknown, path: "/hub/installations/abc") == .unknownKey)
    }

    @Test func signatureOfAnotherRuleFails() {
        let otherRule = Self.dotNet.replacingOccurrences(
            of: "skn=DefaultFullSharedAccessSignature", with: "skn=DefaultListenSharedAccessSignature")
        #expect(reason(otherRule, path: "/hub/installations/abc") == .invalidSignature)
    }

    @Test(arguments: [
        "", "Bearer abc", "SharedAccessSignature ", "SharedAccessSignature sr=a&sig=b&se=1",
        "SharedAccessSignature sr&sig=b&se=1&skn=x",
        "SharedAccessSignature sr=a&sig=%zz&se=1&skn=DefaultFullSharedAccessSignature",
        "SharedAccessSignature sr=a&sr=a&sig=b&se=1&skn=x",
    ])
    func malformedTokensFail(header: String) {
        #expect(reason(header, path: "/hub/messages") == .malformed)
    }

    @Test func missingHeaderIsMalformed() {
        #expect(throws: SASVerificationError.self) {
            try Self.verifier.verify(header: nil, host: "h", path: "/hub", now: Self.before)
        }
    }

    @Test func secondaryKeyVerifies() throws {
        let verifier = SASVerifier(rules: [
            AuthorizationRule(name: "r", primaryKey: "primary", secondaryKey: "secondary", rights: .listen)
        ])
        let token = SharedAccessSignature.make(resource: "http://h/hub", keyName: "r", key: "secondary", now: Date())
        #expect(try verifier.verify(header: token, host: "h", path: "/hub/x").name == "r")
    }

    @Test func audienceNormalisation() {
        #expect(
            SASVerifier.normalizedAudience("HTTPS://NS.servicebus.windows.net:443/Hub?api-version=1")
                == "ns.servicebus.windows.net/hub/")
        #expect(SASVerifier.normalizedAudience("sb://ns/") == "ns/")
        #expect(SASVerifier.normalizedAudience("ns") == "ns/")
        #expect(SASVerifier.normalizedAudience("http://[::1]:8080/hub/") == "[::1]/hub/")
    }

    @Test func rightsImplication() {
        #expect(AccessRights.full.allow(.send))
        #expect(AccessRights.manage.allow([.send, .listen]))
        #expect(!AccessRights.listen.allow(.send))
        #expect(AccessRights.listen.allow(.listen))
    }

    @Test func percentEncodingRoundTrips() {
        let text = "https://ns/hub?x=1&y=ü €"
        #expect(PercentEncoding.encode(text) == "https%3a%2f%2fns%2fhub%3fx%3d1%26y%3d%c3%bc%20%e2%82%ac")
        #expect(PercentEncoding.decode(PercentEncoding.encode(text, uppercaseHex: true)) == text)
        #expect(PercentEncoding.decode("%4") == nil)
        #expect(PercentEncoding.decode("a+b") == "a+b")
    }

    private func reason(
        _ header: String, path: String, host: String = "ns.servicebus.windows.net", now: Date = before
    ) -> SASVerificationError.Reason? {
        do {
            _ = try Self.verifier.verify(header: header, host: host, path: path, now: now)
            return nil
        } catch {
            return error.reason
        }
    }
}

/// One comparison of secrets for the signature, the metrics token and claim secrets.
@Suite struct ConstantTimeTests {
    @Test func equalOnlyForTheSameBytes() {
        #expect(ConstantTime.equal("abc", "abc") && !ConstantTime.equal("abc", "abd") && !ConstantTime.equal("ab", "abc"))
        #expect(ConstantTime.equal([UInt8](), [UInt8]()))
        // Lengths that differ by a multiple of 256: a difference kept in a byte lost them, and
        // 256 zeros matched nothing at all.
        #expect(!ConstantTime.equal([UInt8](repeating: 0, count: 256), [UInt8]()))
        #expect(
            !ConstantTime.equal(
                [UInt8](repeating: 7, count: 32) + [UInt8](repeating: 0, count: 256), [UInt8](repeating: 7, count: 32)))
    }
}
