import Crypto
import Foundation
import LocalHubSupport
import NotificationHubs

/// The credentials of the real push services a hub delivers through, from a JSON file
/// (`providers.json` in the hub's data folder). A hub the file does not name, or a platform
/// its entry leaves out, keeps the built-in push service behaviour. Key files are named, not
/// inlined, read once at load, and refused unless only their owner may read them
/// (`SecretFile`); paths are relative to the file's folder. Unknown fields are refused: a
/// misspelt one would otherwise turn delivery off without a word.
///
///     {"hubs": {"breakingnews": {
///         "apns": {"keyFile": "AuthKey_ABC123DEFG.p8", "keyId": "ABC123DEFG", "teamId": "DEF123GHIJ",
///                  "topic": "com.example.news", "endpoint": "production", "caFile": "peer-ca.pem"},
///         "fcmV1": {"serviceAccountFile": "service-account.json", "endpoint": "https://…", "caFile": "…"},
///         "webPush": {"vapidKeyFile": "vapid.pem", "subject": "mailto:news@example.com", "caFile": "…"}}}}
public struct PushCredentials: Sendable {
    public static let fileName = "providers.json"

    public struct APNs: Sendable {
        public let token: APNsProviderToken
        /// The app's bundle id: every request's `apns-topic` (a sender cannot set it).
        public let topic: String
        /// `https://api.push.apple.com`, Apple's development endpoint, or a URL given (a loopback peer).
        public let endpoint: String
        public let caFile: String?

        /// Credentials given directly (the bench's loopback peer) rather than loaded.
        public init(token: APNsProviderToken, topic: String, endpoint: String, caFile: String?) {
            self.token = token
            self.topic = topic
            self.endpoint = endpoint
            self.caFile = caFile
        }
    }

    public struct FCMv1: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        public let projectId: String
        public let clientEmail: String
        /// The service account's RSA key, PEM; signs the token endpoint's assertions.
        public let privateKeyPEM: String
        public let tokenURI: String
        /// `https://fcm.googleapis.com` unless given.
        public let endpoint: String
        public let caFile: String?

        /// Never the key: printing or dumping the credentials shows where they lead.
        public var description: String { "FCM v1 \(projectId) as \(clientEmail) at \(endpoint)" }
        public var debugDescription: String { description }
        public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
    }

    public struct WebPush: Sendable {
        /// The VAPID key (P-256); its public half is what browsers subscribe with.
        public let vapidKey: P256.Signing.PrivateKey
        /// `mailto:` or `https:`, sent in every VAPID token.
        public let subject: String
        public let caFile: String?
        /// Whether subscriptions may name this machine or a private network (a test peer):
        /// otherwise anyone who registers a browser could make the hub call them.
        public var allowPrivateEndpoints = false
    }

    public struct Hub: Sendable {
        public var apns: APNs?
        public var fcmV1: FCMv1?
        public var webPush: WebPush?
    }

    /// By lower-cased hub name.
    public private(set) var hubs: [String: Hub] = [:]

    public init() {}

    public func hub(_ name: String) -> Hub? { hubs[name.lowercased()] }

    /// Reads and checks `url`, and every key file it names.
    public static func load(_ url: URL) throws(PushCredentialsError) -> PushCredentials {
        let folder = url.deletingLastPathComponent()
        let bytes: [UInt8]
        do {
            // Bounded, and never waiting on a FIFO; it holds no secret, so any mode will do.
            bytes = try SecretFile.read(url.path, ownerOnly: false)
        } catch {
            throw PushCredentialsError("", error.description)
        }
        let root: JSONValue
        do { root = try JSONValue(parsing: bytes) } catch {
            throw PushCredentialsError(url.path, "is not JSON: \(error)")
        }
        var fields = Fields(root, at: "", file: url.path)
        try fields.only(["hubs"])
        guard let hubs = try fields.object("hubs") else { throw PushCredentialsError(url.path, "has no \"hubs\" object") }
        var result = PushCredentials()
        for (name, value) in hubs {
            guard value.objectMembers != nil else { throw PushCredentialsError(url.path, "hubs.\(name) must be an object") }
            var hub = Fields(value, at: "hubs.\(name)", file: url.path)
            try hub.only(["apns", "fcmV1", "webPush"])
            var entry = Hub()
            let at = "hubs.\(name)"
            if let apns = try hub.object("apns") { entry.apns = try loadAPNs(.object(apns), at: "\(at).apns", folder, url.path) }
            if let fcm = try hub.object("fcmV1") { entry.fcmV1 = try loadFCM(.object(fcm), at: "\(at).fcmV1", folder, url.path) }
            if let web = try hub.object("webPush") {
                entry.webPush = try loadWebPush(.object(web), at: "\(at).webPush", folder, url.path)
            }
            guard result.hubs.updateValue(entry, forKey: name.lowercased()) == nil else {
                throw PushCredentialsError(url.path, "names the hub \(name) twice (hub names ignore case)")
            }
        }
        return result
    }
}
