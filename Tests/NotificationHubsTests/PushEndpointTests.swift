import Crypto
import NotificationHubs
import PropertyBased
import Testing

/// Browser endpoints are read once, strictly, into one canonical spelling (issue 26, item 1):
/// the address a request goes to is decided from that value alone.
struct PushEndpointTests {
    /// Every spelling of this machine an attacker tried reads as the address it means.
    @Test(arguments: [
        ("https://127.1/p", "127.0.0.1"), ("https://2130706433/p", "127.0.0.1"), ("https://0177.0.0.1/p", "127.0.0.1"),
        ("https://0x7f000001/p", "127.0.0.1"), ("https://0/p", "0.0.0.0"), ("https://0x7F.1/p", "127.0.0.1"),
        ("https://127.0.1/p", "127.0.0.1"), ("https://[0::1]/p", "[::1]"), ("https://[::0.0.0.1]/p", "[::1]"),
        ("https://[0:0::]/p", "[::]"), ("https://[::%31]/p", "[::1]"), ("https://[::FFFF:127.0.0.1]/p", "[::ffff:7f00:1]"),
        ("https://LocalHost/p", "localhost"), ("https://push.Example.COM./p", "push.example.com."),
        ("https://%6c%6fcalhost/p", "localhost"),
    ])
    func spellingsReadAsTheAddressTheyMean(endpoint: String, host: String) throws {
        let parsed = try PushEndpoint(endpoint)
        #expect(parsed.hostText == host)
        #expect(parsed.port == 443 && parsed.path == "/p")
    }

    @Test func portsPathsAndOrigins() throws {
        let endpoint = try PushEndpoint("HTTPS://fcm.googleapis.com:8443/fcm/send/abc?x=1")
        #expect(endpoint.origin == "https://fcm.googleapis.com:8443")
        #expect(endpoint.url == "https://fcm.googleapis.com:8443/fcm/send/abc?x=1")
        #expect(try PushEndpoint("https://a.example:443").url == "https://a.example/")
        #expect(try PushEndpoint("https://a.example?q").url == "https://a.example/?q")
        #expect(try PushEndpoint("https://[2001:db8::1]:1/x").origin == "https://[2001:db8::1]:1")
        #expect(try PushEndpoint("https://a.example:65535/").port == 65535)
    }

    /// What a browser never gives is refused, with the reason.
    @Test(arguments: [
        ("ftp://a.example/p", "https://"), ("http://a.example/p", "https://"), ("https://", "no host"),
        ("https:///p", "no host"), ("https://a.example:99999/p", "port"), ("https://a.example:0/p", "port"),
        ("https://a.example:65536/", "port"), ("https://a.example:/p", "port"), ("https://a.example:8x/", "port"),
        ("https://user@a.example/p", "user information"), ("https://a.example/p#x", "'#'"),
        ("https://a.example/p\\q", "'#'"), ("https://a b/p", "printable"), ("https://[::1/p", "']'"),
        ("https://[fe80::1%25eth0]/p", "IPv6"), ("https://[1::2::3]/", "IPv6"), ("https://[12345::]/", "IPv6"),
        ("https://[::1]x/", "after"), ("https://a..b/", "DNS name"), ("https://a$b/", "DNS name"),
        ("https://%zz/", "%-escape"), ("https://\u{e9}.example/", "printable"),
        ("https://a.example/" + String(repeating: "p", count: 2048), "2048"),
        ("https://" + String(repeating: "a", count: 64) + ".example/", "DNS name"),
    ])
    func whatABrowserNeverGivesIsRefused(endpoint: String, saying: String) {
        #expect {
            try PushEndpoint(endpoint)
        } throws: { error in
            (error as? PushEndpoint.Refusal)?.description.contains(saying) == true
        }
    }

    /// Reading the canonical URL again gives the same endpoint, for any address.
    @Test func theCanonicalSpellingReadsBackTheSame() async {
        await propertyCheck(count: 300, input: Gen.uint8().array(of: 16), Gen.int(in: 1...65535)) { bytes, port in
            let v6 = try PushEndpoint("https://[\(PushEndpoint.ipv6Text(bytes))]:\(port)/p")
            #expect(v6.host == .ipv6(bytes))
            #expect(try PushEndpoint(v6.url) == v6)
            let v4 = Array(bytes.prefix(4))
            let dotted = try PushEndpoint("https://\(v4.map(String.init).joined(separator: ".")):\(port)/p")
            #expect(dotted.host == .ipv4(v4))
            #expect(try PushEndpoint(dotted.url) == dotted)
        }
    }

    @Test func subscriptionKeysAreCheckedWhenStored() throws {
        let key = Base64URL.encode(Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation))
        let auth = Base64URL.encode(Array(repeating: 7, count: 16))
        try WebPushSubscription.check(endpoint: "https://push.example/x", p256dh: key, auth: auth)
        try WebPushSubscription.check(endpoint: "https://push.example/x", p256dh: key + "=", auth: auth + "==")
        var offCurve = try #require(Base64URL.decode(key))
        offCurve[64] ^= 0x01
        let compressed = Base64URL.encode(
            Array(P256.KeyAgreement.PrivateKey().publicKey.compressedRepresentation))
        let cases: [(String, String, String, String)] = [
            ("ftp://push.example/x", key, auth, "endpoint must be an https:// URL"),
            ("https://push.example/" + String(repeating: "x", count: 60_000), key, auth, "endpoint is 60021 bytes"),
            ("https://push.example/x", Base64URL.encode(offCurve), auth, "p256dh"),
            ("https://push.example/x", compressed, auth, "p256dh"),
            ("https://push.example/x", String(repeating: "A", count: 50_000), auth, "p256dh"),
            ("https://push.example/x", key, Base64URL.encode(Array(repeating: 1, count: 15)), "auth"),
            ("https://push.example/x", key, Base64URL.encode(Array(repeating: 1, count: 17)), "auth"),
            ("https://push.example/x", key, "not base64!", "auth"),
        ]
        for (endpoint, p256dh, secret, saying) in cases {
            #expect(throws: InstallationError.self, "\(saying)") {
                try WebPushSubscription.check(endpoint: endpoint, p256dh: p256dh, auth: secret)
            }
            do {
                try WebPushSubscription.check(endpoint: endpoint, p256dh: p256dh, auth: secret)
            } catch {
                #expect(error.description.contains(saying), "\(error.description)")
            }
        }
        // An installation with one is refused with that reason.
        var installation = Installation(installationId: "b1", platform: .browser, pushChannel: nil)
        installation.pushChannel = .browser(endpoint: "https://push.example:99999/x", p256dh: key, auth: auth)
        #expect(throws: InstallationError.self) { try installation.validatedForStorage(lastUpdate: "x") }
        installation.pushChannel = .browser(endpoint: "https://push.example/x", p256dh: key, auth: auth)
        _ = try installation.validatedForStorage(lastUpdate: "x")
    }
}
