import Foundation
import NotificationHubs

/// Who this terminal is to the hub, kept apart from the preferences so that a damaged
/// `defaults.json` never costs it: `installation.json` under the data folder holds the
/// installation id, the device token and its claim's secret (and the previous ones, while the
/// previous token is retired), and the last registration. Written atomically, owner only, changed under `installation.lock`; a corrupt
/// file is moved aside with a warning, never overwritten.
public final class InstallationStore: Sendable {
    public let url: URL
    private let file: KeptJSONObject

    public init(url: URL) {
        self.url = url
        self.file = KeptJSONObject(url: url, consequence: "this terminal has a new installation id and device token")
    }

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
        let (members, warning) = file.read(now: now)
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

    static let claimSecretKey = "claimSecret"
    static let previousClaimSecretKey = "previousClaimSecret"
    static let tokenClaimsWithSecretKey = "tokenClaimsWithSecret"

    public func save(_ values: Values) throws {
        try file.write([
            (DefaultsStore.installationIdKey, values.installationId.map(JSONValue.string)),
            (DefaultsStore.deviceTokenKey, values.deviceToken.map(JSONValue.string)),
            (DefaultsStore.previousDeviceTokenKey, values.previousDeviceToken.map(JSONValue.string)),
            (Self.claimSecretKey, values.claimSecret.map(JSONValue.string)),
            (Self.previousClaimSecretKey, values.previousClaimSecret.map(JSONValue.string)),
            (Self.tokenClaimsWithSecretKey, values.tokenClaimsWithSecret ? .bool(true) : nil),
            (DefaultsStore.registrationKey, values.lastRegistration?.json),
        ])
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
