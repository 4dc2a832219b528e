import Foundation
import NotificationHubs

/// Who this terminal is to the hub: a stable installation id (made once) and its push
/// channel, a device token for the built-in push service, kept in `installation.json`.
///
/// The device token is 32 random bytes, made once and kept with the installation; with it,
/// the secret its claim answered (`BuiltInPushClaim`), which proves this terminal with every
/// stream, inbox and release, so that a token seen by others opens nothing. A token made by a
/// version whose claims had no secrets (it may have been shown to others), or derived from the
/// installation id as the earliest versions did, is replaced at the next start; the old one is
/// kept as `previousDeviceToken` (with its secret, if any) until the installation is registered
/// with the new one and what arrived for the old one has been fetched
/// (`NewsProfile.retirePreviousDevice`).
public struct DeviceIdentity: Sendable, Hashable {
    public let installationId: String
    /// Upper-case hex, as the tutorial formats APNs tokens (`%02X`).
    public let deviceToken: String
    /// The token this terminal had before, while deliveries to it may still be waiting.
    public let previousDeviceToken: String?
    /// The secret of the claim of `deviceToken`, once the hub answered it (nil before the first
    /// claim, and on a hub without the built-in push service).
    public let claimSecret: String?
    /// The secret of the claim of `previousDeviceToken`, if it had one.
    public let previousClaimSecret: String?

    public init(
        installationId: String, deviceToken: String, previousDeviceToken: String? = nil, claimSecret: String? = nil,
        previousClaimSecret: String? = nil
    ) {
        self.installationId = installationId
        self.deviceToken = deviceToken
        self.previousDeviceToken = previousDeviceToken
        self.claimSecret = claimSecret
        self.previousClaimSecret = previousClaimSecret
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
            chosen.store(in: &values)
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

    /// The identity `values` hold, if they hold a usable one: a token of this version's
    /// (`tokenClaimsWithSecret`), not derived from the id.
    public static func kept(in values: InstallationStore.Values) -> DeviceIdentity? {
        guard let id = values.installationId, let token = values.deviceToken, !id.isEmpty, token.count == 64,
            token != derivedToken(for: id), values.tokenClaimsWithSecret
        else { return nil }
        return DeviceIdentity(
            installationId: id, deviceToken: token, previousDeviceToken: values.previousDeviceToken,
            claimSecret: values.claimSecret, previousClaimSecret: values.previousClaimSecret)
    }

    /// A new token for the installation `values` hold (a new installation when they hold
    /// none); the token they held becomes the previous one, with its claim's secret.
    private static func made(from values: InstallationStore.Values) -> DeviceIdentity {
        let id = values.installationId.flatMap { $0.isEmpty ? nil : $0 } ?? UUID().uuidString.lowercased()
        guard let previous = values.deviceToken.flatMap({ DeviceToken.isValid($0) ? $0 : nil }) else {
            return DeviceIdentity(
                installationId: id, deviceToken: randomToken(), previousDeviceToken: values.previousDeviceToken,
                previousClaimSecret: values.previousClaimSecret)
        }
        return DeviceIdentity(
            installationId: id, deviceToken: randomToken(), previousDeviceToken: previous,
            previousClaimSecret: values.claimSecret)
    }

    /// Writes this identity into `values` (a token of this version's).
    func store(in values: inout InstallationStore.Values) {
        values.installationId = installationId
        values.deviceToken = deviceToken
        values.previousDeviceToken = previousDeviceToken
        values.claimSecret = claimSecret
        values.previousClaimSecret = previousClaimSecret
        values.tokenClaimsWithSecret = true
    }

    /// Gives the terminal kept in `installations` a new device token (its claim secret to come
    /// with its first claim), the one it had becoming the previous one: what a terminal whose
    /// token leaked, or was claimed by another, does (`breaking-news installation
    /// --new-device-token`). The registration is forgotten, so the next one registers the
    /// new token.
    public static func replaceToken(in installations: InstallationStore) throws -> DeviceIdentity {
        var identity: DeviceIdentity?
        try installations.update { values in
            let made = made(from: values)
            made.store(in: &values)
            values.lastRegistration = nil
            identity = made
        }
        return identity!
    }

    /// 32 random bytes as 64 upper-case hex digits.
    public static func randomToken() -> String { Hex.random(bytes: 32) }

    /// The token earlier versions derived from the installation id (SHA-256, hex): anyone who
    /// learned the id could read this terminal's news with it. Only recognised, never made.
    public static func derivedToken(for installationId: String) -> String {
        Hex.sha256(installationId)
    }
}
