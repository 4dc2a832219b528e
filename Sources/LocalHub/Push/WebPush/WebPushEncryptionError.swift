/// Why a Web Push message could not be encrypted for a subscription; says which input was
/// wrong, never quotes a key.
public enum WebPushEncryptionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `p256dh` is not base64url, or not an uncompressed P-256 point (65 bytes, `04` first)
    /// on the curve.
    case badP256dh
    /// `auth` is not base64url, or not 16 bytes.
    case badAuth
    /// A salt given (tests) is not 16 bytes.
    case badSalt
    /// The plaintext has this many bytes, more than one record holds.
    case tooLarge(Int)

    public var description: String {
        switch self {
        case .badP256dh: "the subscription's p256dh must be an uncompressed P-256 public key (65 bytes), base64url"
        case .badAuth: "the subscription's auth secret must be 16 bytes, base64url"
        case .badSalt: "the salt must be 16 bytes"
        case .tooLarge(let count):
            "the payload is \(count) bytes; Web Push takes at most \(WebPushEncryption.maximumPlaintext)"
        }
    }

    /// The reason a client refuses the message with (`PushAnswer.refused`).
    public var reason: String {
        switch self {
        case .badP256dh: "BadP256dh"
        case .badAuth: "BadAuth"
        case .badSalt: "BadSalt"
        case .tooLarge: "PayloadTooLarge"
        }
    }
}
