import Foundation
import LocalHub
import NotificationHubs
import _CryptoExtras

extension FCMPeer {
    /// A Google service account made at test time: a new RSA 2048 key, and the key file and
    /// providers file a hub loads it from.
    public struct ServiceAccount: Sendable {
        public let key: _RSA.Signing.PrivateKey
        public let projectId: String
        public let clientEmail: String

        public init(projectId: String = "news-1", clientEmail: String = "push@news-1.iam.gserviceaccount.com") throws {
            key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            self.projectId = projectId
            self.clientEmail = clientEmail
        }

        /// The key as Google's files hold it: PEM PKCS #8 (`BEGIN PRIVATE KEY`).
        public var privateKeyPEM: String { key.pkcs8PEMRepresentation }

        /// The service account's JSON key file, in the shape Google gives it.
        public func json(tokenURI: String) -> String {
            JSONValue.object([
                ("type", .string("service_account")), ("project_id", .string(projectId)),
                ("private_key_id", .string("0123456789abcdef0123456789abcdef01234567")),
                ("private_key", .string(privateKeyPEM)), ("client_email", .string(clientEmail)),
                ("client_id", .string("100000000000000000001")),
                ("auth_uri", .string("https://accounts.google.com/o/oauth2/auth")), ("token_uri", .string(tokenURI)),
            ]).text
        }

        /// Writes `service-account.json` (mode 0600) and a `providers.json` naming it for
        /// `hub` with FCM at `endpoint` and `caFile` trusted, into `folder`; returns the
        /// providers file, for `PushCredentials.load`.
        @discardableResult
        public func writeProviders(
            in folder: URL, hub: String = "breakingnews", tokenURI: String, endpoint: String, caFile: String
        ) throws -> URL {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let account = folder.appendingPathComponent("service-account.json")
            try Data(json(tokenURI: tokenURI).utf8).write(to: account)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: account.path)
            let fcm = JSONValue.object([
                ("serviceAccountFile", .string("service-account.json")), ("endpoint", .string(endpoint)),
                ("caFile", .string(caFile)),
            ])
            let providers = folder.appendingPathComponent(PushCredentials.fileName)
            try Data(JSONValue.object([("hubs", .object([(hub, .object([("fcmV1", fcm)]))]))]).text.utf8).write(to: providers)
            return providers
        }

        /// The credentials for `peer` serving at `url`, loaded as a hub loads them.
        public func credentials(for peer: FCMPeer, at url: String, in folder: URL) throws -> PushCredentials.FCMv1 {
            let file = try writeProviders(in: folder, tokenURI: "\(url)/token", endpoint: url, caFile: peer.certificateFile)
            guard let fcm = try PushCredentials.load(file).hub("breakingnews")?.fcmV1 else {
                throw CocoaError(.fileReadCorruptFile)
            }
            return fcm
        }
    }
}
