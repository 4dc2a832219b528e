import Foundation
import NotificationHubs

/// Who this terminal is to the hub: a stable installation id (made once) and its push
/// channel, a device token for the sandbox push service.
///
/// The device token is 32 random bytes, made once and kept in the user defaults: like an APNs
/// token it is a capability, the only thing that opens this terminal's stream, so nobody may
/// derive it from what the hub shows others. Earlier versions derived it from the
/// installation id; such a token is replaced at the next start, and the old one is kept as
/// `previousDeviceToken` until the installation is registered with the new one and what
/// arrived for the old one has been fetched (`NewsProfile.retirePreviousDevice`).
public struct DeviceIdentity: Sendable, Hashable {
    public let installationId: String
    /// Upper-case hex, as the tutorial formats APNs tokens (`%02X`).
    public let deviceToken: String
    /// The token this terminal had before, while deliveries to it may still be waiting.
    public let previousDeviceToken: String?

    public init(installationId: String, deviceToken: String, previousDeviceToken: String? = nil) {
        self.installationId = installationId
        self.deviceToken = deviceToken
        self.previousDeviceToken = previousDeviceToken
    }

    /// The identity kept in the user defaults, made and saved on first use; a derived token
    /// of an earlier version is replaced. The choice is made inside the store's locked
    /// update, so two processes starting at once in a new home agree on one identity.
    public static func load(from store: DefaultsStore) throws -> DeviceIdentity {
        if let kept = kept(in: store.load().values) { return kept }
        var identity: DeviceIdentity?
        try store.update { values in
            let chosen = kept(in: values) ?? made(from: values)
            values.installationId = chosen.installationId
            values.deviceToken = chosen.deviceToken
            values.previousDeviceToken = chosen.previousDeviceToken
            identity = chosen
        }
        return identity!
    }

    private static func kept(in values: DefaultsStore.Values) -> DeviceIdentity? {
        guard let id = values.installationId, let token = values.deviceToken, !id.isEmpty, token.count == 64,
            token != derivedToken(for: id)
        else { return nil }
        return DeviceIdentity(installationId: id, deviceToken: token, previousDeviceToken: values.previousDeviceToken)
    }

    private static func made(from values: DefaultsStore.Values) -> DeviceIdentity {
        let id = values.installationId.flatMap { $0.isEmpty ? nil : $0 } ?? UUID().uuidString.lowercased()
        let previous = values.deviceToken.flatMap { DeviceToken.isValid($0) ? $0 : nil }
        return DeviceIdentity(
            installationId: id, deviceToken: randomToken(), previousDeviceToken: previous ?? values.previousDeviceToken)
    }

    /// 32 random bytes as 64 upper-case hex digits.
    public static func randomToken() -> String { Hex.random(bytes: 32) }

    /// The token earlier versions derived from the installation id (SHA-256, hex): anyone who
    /// learned the id could read this terminal's news with it. Only recognised, never made.
    public static func derivedToken(for installationId: String) -> String {
        Hex.sha256(installationId)
    }
}
