import Crypto
import Foundation
import LocalHubSupport
import NotificationHubs
import Testing

@testable import LocalHub

/// The providers file (issue 14, item 1): every credential checked at load, key files only
/// at 0600, unknown fields and bad values refused with the file and the field named.
struct ProviderCredentialsTests {
    /// A folder with an APNs key, a service account and a VAPID key, each 0600.
    struct Folder {
        let url: URL
        let apnsKey = P256.Signing.PrivateKey()

        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("providers-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            try write("AuthKey_ABC123DEFG.p8", apnsKey.pemRepresentation)
            let account: JSONValue = .object([
                ("type", .string("service_account")), ("project_id", .string("news-1")),
                ("private_key", .string("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n")),
                ("client_email", .string("push@news-1.iam.gserviceaccount.com")),
                ("token_uri", .string("https://127.0.0.1:9443/token")),
            ])
            try write("service-account.json", account.text)
            try write("vapid.pem", P256.Signing.PrivateKey().pemRepresentation)
            try write("peer-ca.pem", "-----BEGIN CERTIFICATE-----\n", mode: 0o644)
        }

        func write(_ name: String, _ text: String, mode: Int = 0o600) throws {
            let file = url.appendingPathComponent(name)
            try Data(text.utf8).write(to: file)
            chmod(file.path, mode_t(mode))
        }

        /// Writes the providers file with `hub`'s entry and loads it.
        func load(_ hub: String) throws(PushCredentialsError) -> PushCredentials {
            let file = url.appendingPathComponent(PushCredentials.fileName)
            try? Data(#"{"hubs": {"BreakingNews": \#(hub)}}"#.utf8).write(to: file)
            return try PushCredentials.load(file)
        }
    }

    static let apns =
        #""apns": {"keyFile": "AuthKey_ABC123DEFG.p8", "keyId": "ABC123DEFG", "teamId": "DEF123GHIJ", "#
        + #""topic": "com.example.news", "endpoint": "sandbox", "caFile": "peer-ca.pem"}"#
    static let fcm = #""fcmV1": {"serviceAccountFile": "service-account.json", "endpoint": "https://127.0.0.1:9444/"}"#
    static let web = #""webPush": {"vapidKeyFile": "vapid.pem", "subject": "mailto:news@example.com"}"#

    @Test func aFileWithEveryProviderLoads() throws {
        let folder = try Folder()
        defer { try? FileManager.default.removeItem(at: folder.url) }
        let loaded = try folder.load("{\(Self.apns), \(Self.fcm), \(Self.web)}")
        let hub = try #require(loaded.hub("breakingnews"))
        let apns = try #require(hub.apns)
        #expect(apns.topic == "com.example.news" && apns.endpoint == "https://api.sandbox.push.apple.com")
        #expect(apns.caFile == folder.url.appendingPathComponent("peer-ca.pem").path)
        let parts = apns.token.token().split(separator: ".").map(String.init)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64URL.decode(parts[2])))
        #expect(folder.apnsKey.publicKey.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8)))
        let fcm = try #require(hub.fcmV1)
        #expect(fcm.projectId == "news-1" && fcm.tokenURI == "https://127.0.0.1:9443/token")
        #expect(fcm.endpoint == "https://127.0.0.1:9444")
        #expect(hub.webPush?.subject == "mailto:news@example.com")
        // A platform left out keeps the built-in push service behaviour; another hub is not configured.
        #expect(try folder.load("{\(Self.web)}").hub("BREAKINGNEWS")?.apns == nil)
        #expect(loaded.hub("other") == nil)
        // The service's own endpoint form (…/3/device) is taken too; printing never shows a key.
        let own = try folder.load(
            "{" + Self.apns.replacingOccurrences(of: #""sandbox""#, with: #""https://127.0.0.1:9445/3/device""#) + "}")
        #expect(own.hub("breakingnews")?.apns?.endpoint == "https://127.0.0.1:9445")
        #expect(!"\(fcm)".contains("PRIVATE KEY") && !String(reflecting: fcm).contains("PRIVATE KEY"))
        var dumped = ""
        dump(fcm, to: &dumped)
        #expect(!dumped.contains("PRIVATE KEY"))
    }

    /// An APNs entry with the key named and `rest` after it.
    static func apnsEntry(key: String = "AuthKey_ABC123DEFG.p8", team: String = "DEF123GHIJ", _ rest: String) -> String {
        #"{"apns": {"keyFile": "\#(key)", "keyId": "ABC123DEFG", "teamId": "\#(team)", \#(rest)}}"#
    }

    @Test(arguments: [
        (#"{"apns": {"keyFile": "AuthKey_ABC123DEFG.p8", "keyID": "x"}}"#, "unknown field hubs.BreakingNews.apns.keyID"),
        (apnsEntry(#""endpoint": "sandbox""#), "apns.topic is missing"),
        (apnsEntry(key: "nope.p8", #""topic": "t", "endpoint": "sandbox""#), "cannot be opened"),
        (apnsEntry(team: "DEF", #""topic": "t", "endpoint": "sandbox""#), "team id"),
        (apnsEntry(#""topic": "a b", "endpoint": "sandbox""#), "bundle id"),
        (apnsEntry(#""topic": "t", "endpoint": "http://x""#), "must be an https URL"),
        (apnsEntry(#""topic": "t", "endpoint": "sandbox", "caFile": "no.pem""#), "cannot be read"),
        (apnsEntry(key: "vapid.pem", team: "DEF123GHIJ", #""topic": "t", "endpoint": "sandbox", "x": 1"#), "unknown field"),
        (#"{"fcmV1": {"serviceAccountFile": "vapid.pem"}}"#, "is not JSON"),
        (#"{"fcmV1": {"serviceAccountFile": "peer-ca.pem"}}"#, "chmod 600"),
        (#"{"webPush": {"vapidKeyFile": "service-account.json", "subject": "mailto:a@b.c"}}"#, "not a P-256 private key"),
        (#"{"webPush": {"vapidKeyFile": "vapid.pem", "subject": "http://example.com"}}"#, "mailto: or https:"),
        (#"{"apns": 5}"#, "apns must be an object"),
        ("7", "hubs.BreakingNews must be an object"),
        (#"{"apns": {"a\u001b[2Jb": 1}}"#, "unknown field hubs.BreakingNews.apns.a?[2Jb"),
        ("{", "is not JSON"),
    ])
    func aBadEntryIsRefusedNamingTheField(entry: String, says: String) throws {
        let folder = try Folder()
        defer { try? FileManager.default.removeItem(at: folder.url) }
        let error = #expect(throws: PushCredentialsError.self) { try folder.load(entry) }
        #expect(error?.description.contains(says) == true, "\(error?.description ?? "")")
        #expect(error?.description.contains("BEGIN") == false, "never a key's contents")
    }

    @Test func hubNamesDifferingOnlyInCaseAreRefused() throws {
        let folder = try Folder()
        defer { try? FileManager.default.removeItem(at: folder.url) }
        let file = folder.url.appendingPathComponent(PushCredentials.fileName)
        try Data(#"{"hubs": {"news": {}, "NEWS": {}}}"#.utf8).write(to: file)
        let error = #expect(throws: PushCredentialsError.self) { try PushCredentials.load(file) }
        #expect(error?.description.contains("twice") == true)
        try Data(#"{"hubs": {}, "extra": 1}"#.utf8).write(to: file)
        #expect(throws: PushCredentialsError.self) { try PushCredentials.load(file) }
    }
}
