import Foundation
import NotificationHubs

/// Who this terminal is to the hub, kept apart from the preferences so that a damaged
/// `defaults.json` never costs it: `installation.json` under the data folder holds the
/// installation id, the device token and its claim's secret (and the previous ones, while the
/// previous token is retired), and the last registration. Written atomically, owner only, changed under `installation.lock`; a corrupt
/// file is moved aside with a warning, never overwritten.
///
/// Every save also writes a copy, `installation.backup.json` beside it: a corrupt file is
/// then set aside and who this terminal is restored from the copy (the same installation id,
/// token and claim secret), so the hub keeps one installation of this terminal, never an old
/// one still sent to beside a new one. Without a usable copy the terminal starts anew, and the
/// warning says that the old installation stays on the hub and why.
public final class InstallationStore: Sendable {
    public let url: URL
    private let file: KeptJSONObject
    private let copy: KeptJSONObject

    public init(url: URL) {
        self.url = url
        self.file = KeptJSONObject(url: url, consequence: Self.startsAnew)
        self.copy = KeptJSONObject(url: Self.backupURL(of: url), consequence: "it is written again at the next registration")
    }

    /// The copy of `url` every save writes: `installation.backup.json` beside it.
    public static func backupURL(of url: URL) -> URL {
        url.deletingLastPathComponent().appendingPathComponent("installation.backup.json")
    }

    public var backupURL: URL { Self.backupURL(of: url) }

    static let startsAnew =
        "this terminal has a new installation id and device token; its old installation could not be removed from the hub, "
        + "its id being only in that file (no copy in installation.backup.json), so it stays there with its tags until it "
        + "expires, at most 90 days after its last registration"

    /// What the store holds.
    public struct Values: Sendable, Hashable {
        public var installationId: String?
        public var deviceToken: String?
        /// The token this terminal had before it got a random one, until nothing more can
        /// arrive for it (see `DeviceIdentity`).
        public var previousDeviceToken: String?
        /// The secret the hub answered the claim of `deviceToken` with (and of the previous
        /// token): what proves this terminal with every stream, inbox and release.
        public var claimSecret: String?
        public var previousClaimSecret: String?
        /// Set when `deviceToken` was made by a version whose claims have secrets: a token of
        /// an earlier version may have been shown to others, and is replaced once.
        public var tokenClaimsWithSecret = false
        public var lastRegistration: RegistrationRecord?

        public init(
            installationId: String? = nil, deviceToken: String? = nil, previousDeviceToken: String? = nil,
            claimSecret: String? = nil, previousClaimSecret: String? = nil, tokenClaimsWithSecret: Bool = false,
            lastRegistration: RegistrationRecord? = nil
        ) {
            self.installationId = installationId
            self.deviceToken = deviceToken
            self.previousDeviceToken = previousDeviceToken
            self.claimSecret = claimSecret
            self.previousClaimSecret = previousClaimSecret
            self.tokenClaimsWithSecret = tokenClaimsWithSecret
            self.lastRegistration = lastRegistration
        }
    }

    /// The result of reading the store.
    public struct Loaded: Sendable {
        public var values: Values
        /// Set when the file was corrupt: what happened and where it went.
        public var warning: String?
        /// Whether the file was there (even corrupt): a home of an earlier version has none.
        public var existed: Bool
    }

    public func load(now: Date = Date()) -> Loaded {
        let existed = FileManager.default.fileExists(atPath: url.path)
        var (members, warning) = file.read(now: now)
        if let said = warning, members.isEmpty, let restored = restoredFromCopy() {
            // Set aside: who this terminal is comes back from the copy, written where it was.
            members = restored.members
            warning = said.replacingOccurrences(
                of: Self.startsAnew,
                with: "who this terminal is was restored from installation.backup.json (installation \(restored.id)): "
                    + "the hub keeps one installation of it")
            try? file.write(members.map { ($0.0, Optional($0.1)) })
        }
        var values = Values()
        for (key, value) in members {
            switch key {
            case DefaultsStore.installationIdKey: values.installationId = value.stringValue
            case DefaultsStore.deviceTokenKey: values.deviceToken = value.stringValue
            case DefaultsStore.previousDeviceTokenKey: values.previousDeviceToken = value.stringValue
            case Self.claimSecretKey: values.claimSecret = value.stringValue
            case Self.previousClaimSecretKey: values.previousClaimSecret = value.stringValue
            case Self.tokenClaimsWithSecretKey: values.tokenClaimsWithSecret = value == .bool(true)
            case DefaultsStore.registrationKey: values.lastRegistration = RegistrationRecord(json: value)
            default: break
            }
        }
        return Loaded(values: values, warning: warning, existed: existed)
    }

    /// The copy's members when it holds an identity (an installation id and a device token).
    private func restoredFromCopy() -> (members: [(String, JSONValue)], id: String)? {
        let members = copy.read().members
        let value = { (key: String) in members.first { $0.0 == key }?.1.stringValue }
        guard let id = value(DefaultsStore.installationIdKey), !id.isEmpty, value(DefaultsStore.deviceTokenKey) != nil else {
            return nil
        }
        return (members, id)
    }

    static let claimSecretKey = "claimSecret"
    static let previousClaimSecretKey = "previousClaimSecret"
    static let tokenClaimsWithSecretKey = "tokenClaimsWithSecret"

    /// Writes the store, then its copy (see the type's note).
    public func save(_ values: Values) throws {
        let members: [(String, JSONValue?)] = [
            (DefaultsStore.installationIdKey, values.installationId.map(JSONValue.string)),
            (DefaultsStore.deviceTokenKey, values.deviceToken.map(JSONValue.string)),
            (DefaultsStore.previousDeviceTokenKey, values.previousDeviceToken.map(JSONValue.string)),
            (Self.claimSecretKey, values.claimSecret.map(JSONValue.string)),
            (Self.previousClaimSecretKey, values.previousClaimSecret.map(JSONValue.string)),
            (Self.tokenClaimsWithSecretKey, values.tokenClaimsWithSecret ? .bool(true) : nil),
            (DefaultsStore.registrationKey, values.lastRegistration?.json),
        ]
        try file.write(members)
        try? copy.write(members)
    }

    /// Reads, changes and writes the store under its lock.
    @discardableResult
    public func update(_ change: (inout Values) throws -> Void) throws -> Values {
        try file.withLock {
            var values = load().values
            try change(&values)
            try save(values)
            return values
        }
    }
}
