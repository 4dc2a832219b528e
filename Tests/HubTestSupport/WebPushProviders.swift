import Crypto
import Foundation
import LocalHub
import NotificationHubs

/// A hub's push credentials with Web Push only: the VAPID key in `vapid.pem` (mode 0600) and
/// `providers.json` beside it in `directory` (a hub's data folder finds it there).
public enum WebPushProviders {
    /// Writes both; returns the providers file.
    @discardableResult
    public static func write(
        in directory: URL, vapidKey: P256.Signing.PrivateKey, caFile: String, allowPrivateEndpoints: Bool, hub: String = "news"
    ) throws -> URL {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let keyFile = directory.appendingPathComponent("vapid.pem")
        try Data(vapidKey.pemRepresentation.utf8).write(to: keyFile)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile.path)
        let web = JSONValue.object([
            ("vapidKeyFile", .string("vapid.pem")), ("subject", .string("mailto:news@example.com")),
            ("caFile", .string(caFile)), ("allowPrivateEndpoints", .bool(allowPrivateEndpoints)),
        ])
        let providers = JSONValue.object([("hubs", .object([(hub, .object([("webPush", web)]))]))])
        let file = directory.appendingPathComponent(PushCredentials.fileName)
        try Data(providers.text.utf8).write(to: file)
        return file
    }
}
