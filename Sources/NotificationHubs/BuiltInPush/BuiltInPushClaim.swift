import Foundation

/// What a claim of a device token for the built-in push service came to
/// (`HubClient.claimBuiltInPushDevice`).
public enum BuiltInPushClaim: Sendable, Hashable {
    /// Claimed, or the claim renewed. `secret` when the hub issued one now (a first claim):
    /// the terminal keeps it, as it keeps the token, and sends it with every later stream,
    /// inbox, release and renewal (`BuiltInPushDelivery.claimSecretHeader`).
    case claimed(secret: String?)
    /// The hub has no built-in push service (Azure): its devices are all real.
    case noBuiltInPush

    /// The secret issued now, if any.
    public var secret: String? {
        if case .claimed(let secret) = self { return secret }
        return nil
    }

    /// Whether the hub holds the claim.
    public var isClaimed: Bool { self != .noBuiltInPush }

    /// Bytes of randomness in a secret the hub issues.
    public static let secretBytes = 32

    /// A new secret: 32 random bytes, base64url without padding (43 characters).
    public static func makeSecret() -> String { Base64URL.encode(Hex.randomBytes(secretBytes)) }

    /// Whether `text` has a secret's shape: 43 base64url characters.
    public static func isSecret(_ text: String) -> Bool {
        text.utf8.count == 43
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }

    /// What the hub keeps of a secret: its SHA-256 in hexadecimal, so that a reader of the
    /// database (or of a backup) learns no secret.
    public static func digest(_ secret: String) -> String { Hex.sha256(secret) }
}
