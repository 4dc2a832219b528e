import Foundation
import NotificationHubs

/// Who this terminal is to the hub: a stable installation id (made once) and its push
/// channel, a device token for the sandbox push service, kept in `installation.json`.
///
/// The device token is 32 random bytes, made once and kept with the installation: like an APNs
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

    /// The identity kept in `installations`, made and saved on first use; a derived token of
    /// an earlier version is replaced. A home of an earlier version kept it in the user
    /// defaults: it is moved from there once (with the last registration), then removed from
    /// them. The choice is made inside the store's locked update, so two processes starting
    /// at once in a new home agree on one identity.
    public static func load(from installations: InstallationStore, migrating defaults: DefaultsStore? = nil) throws
        -> DeviceIdentity
    {
        if let kept = kept(in: installations.load().values) { return kept }
        var identity: DeviceIdentity?
        var migrated = false
        try installations.update { values in
            if let kept = kept(in: values) {
                identity = kept
                return
            }
            // An earlier version's home: what it kept in the defaults (removed from there
            // once moved, so this happens once).
            if values.installationId == nil, let defaults {
                let legacy = defaults.load().values
                if legacy.holdsIdentity {
                    values.installationId = legacy.installationId
                    values.deviceToken = legacy.deviceToken
                    values.previousDeviceToken = legacy.previousDeviceToken
                    values.lastRegistration = values.lastRegistration ?? legacy.lastRegistration
                    migrated = true
                }
            }
            let chosen = kept(in: values) ?? made(from: values)
            values.installationId = chosen.installationId
            values.deviceToken = chosen.deviceToken
            values.previousDeviceToken = chosen.previousDeviceToken
            identity = chosen
        }
        if migrated, let defaults {
            // Moved: the defaults hold preferences only from now on.
            _ = try? defaults.update { values in
                values.installationId = nil
                values.deviceToken = nil
                values.previousDeviceToken = nil
                values.lastRegistration = nil
            }
        }
        return identity!
    }

    /// The identity `values` hold, if they hold a usable one.
    public static func kept(in values: InstallationStore.Values) -> DeviceIdentity? {
        guard let id = values.installationId, let token = values.deviceToken, !id.isEmpty, token.count == 64,
            token != derivedToken(for: id)
        else { return nil }
        return DeviceIdentity(installationId: id, deviceToken: token, previousDeviceToken: values.previousDeviceToken)
    }

    private static func made(from values: InstallationStore.Values) -> DeviceIdentity {
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
