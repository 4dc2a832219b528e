import Crypto
import Foundation
import NotificationHubs
import Synchronization

/// The provider token of APNs' token authentication (wire spec §11.3): an ES256 JWT signed
/// with the team's `.p8` key, `{"alg":"ES256","kid":…}.{"iss":…,"iat":…}`, one for every
/// request and connection. APNs refuses a token older than an hour (403
/// ExpiredProviderToken) and one renewed sooner than 20 minutes after the last (429
/// TooManyProviderTokenUpdates), so it is made anew every 50 minutes, and earlier only once
/// after APNs called the token in use expired.
public final class APNsProviderToken: Sendable {
    /// How long a token is used before it is made anew.
    public static let lifetime: TimeInterval = 50 * 60

    private let key: P256.Signing.PrivateKey
    public let keyId: String
    public let teamId: String

    private struct Issued {
        var token: String
        var at: Date
        /// Made early after an ExpiredProviderToken: another such answer waits for the
        /// regular renewal.
        var early: Bool
    }
    private let issued = Mutex<Issued?>(nil)

    /// `key` is the `.p8` file's text: PEM (`-----BEGIN PRIVATE KEY-----`), or its base64
    /// body alone as the service's `Token` field holds it. Key and team ids are Apple's
    /// 10-character ids.
    public init(key text: String, keyId: String, teamId: String) throws(APNsCredentialError) {
        guard Self.isAppleId(keyId) else { throw .badKeyId }
        guard Self.isAppleId(teamId) else { throw .badTeamId }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        do {
            if trimmed.hasPrefix("-----BEGIN") {
                key = try P256.Signing.PrivateKey(pemRepresentation: trimmed)
            } else {
                guard let der = Data(base64Encoded: trimmed.filter { !$0.isWhitespace }) else { throw APNsCredentialError.badKey }
                key = try P256.Signing.PrivateKey(derRepresentation: der)
            }
        } catch {
            throw .badKey
        }
        self.keyId = keyId
        self.teamId = teamId
    }

    /// The public half, for whoever checks the tokens (APNs; the tests' peer).
    public var publicKey: P256.Signing.PublicKey { key.publicKey }

    /// The token to send at `now`.
    public func token(now: Date = Date()) -> String {
        issued.withLock { issued in
            if let current = issued, now >= current.at, now.timeIntervalSince(current.at) < Self.lifetime {
                return current.token
            }
            let fresh = Issued(token: make(at: now), at: now, early: false)
            issued = fresh
            return fresh.token
        }
    }

    /// APNs answered 403 ExpiredProviderToken to `token`: true when the request is worth one
    /// more try with `token(now:)`. Makes the next token at once when `token` is the one in
    /// use and was not itself made early; when another request already replaced it, the
    /// current one is simply tried (many requests in flight share one token).
    @discardableResult
    public func expired(_ token: String, now: Date = Date()) -> Bool {
        issued.withLock { issued in
            guard let current = issued else { return false }
            if current.token != token { return true }
            guard !current.early else { return false }
            issued = Issued(token: make(at: now), at: now, early: true)
            return true
        }
    }

    private func make(at date: Date) -> String {
        let header = #"{"alg":"ES256","kid":"\#(keyId)"}"#
        let claims = #"{"iss":"\#(teamId)","iat":\#(Int64(date.timeIntervalSince1970.rounded(.down)))}"#
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        // ES256 in a JWS is the raw R‖S pair (RFC 7518 §3.4), not DER.
        let signature = (try? key.signature(for: Array(signingInput.utf8)))?.rawRepresentation ?? Data()
        return signingInput + "." + Base64URL.encode(Array(signature))
    }

    /// Apple's key and team ids: ten ASCII letters and digits.
    static func isAppleId(_ text: String) -> Bool {
        text.utf8.count == 10
            && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }
}

/// Why APNs credentials were refused; never quotes the key.
public enum APNsCredentialError: Error, Sendable, Equatable, CustomStringConvertible {
    case badKey
    case badKeyId
    case badTeamId

    public var description: String {
        switch self {
        case .badKey: "the APNs key is not a P-256 private key in PKCS #8 (the .p8 file Apple gives)"
        case .badKeyId: "the APNs key id must be Apple's 10-character id of the key (letters and digits)"
        case .badTeamId: "the APNs team id must be Apple's 10-character team id (letters and digits)"
        }
    }
}
