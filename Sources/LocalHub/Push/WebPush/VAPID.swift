import Crypto
import Foundation
import NotificationHubs
import Synchronization

/// Voluntary application server identification for Web Push (RFC 8292): every request
/// carries `Authorization: vapid t=<JWT>, k=<public key>`, the JWT
/// `{"typ":"JWT","alg":"ES256"}.{"aud":<origin>,"exp":…,"sub":<subject>}` signed with the
/// VAPID key, and `k` the key's public half (base64url of the uncompressed point), the
/// `applicationServerKey` browsers subscribed with. The audience is the origin of the
/// push service's endpoint, so one token serves every subscription of that service: a
/// token lives `lifetime` (12 hours; RFC 8292 allows up to 24) and is used until
/// `renewal` (an hour) before it expires, so that no service sees it run out in flight.
public final class VAPID: Sendable {
    /// How long after it is made a token expires.
    public static let lifetime: TimeInterval = 12 * 60 * 60
    /// How long before it expires a token is replaced.
    public static let renewal: TimeInterval = 60 * 60
    /// The most origins whose tokens are kept; past it, expired ones are dropped, and if that
    /// is not enough, all (endpoints come from installations, which anyone may register).
    static let cachedOrigins = 256

    private let key: P256.Signing.PrivateKey
    /// `mailto:` or `https:`, the `sub` of every token.
    public let subject: String
    /// The `k` parameter: base64url of the uncompressed public key (65 bytes).
    public let publicKey: String

    private struct Token {
        var jwt: String
        var expires: Date
    }
    private let tokens = Mutex<[String: Token]>([:])

    public init(key: P256.Signing.PrivateKey, subject: String) {
        self.key = key
        self.subject = subject
        publicKey = Base64URL.encode(Array(key.publicKey.x963Representation))
    }

    /// The `Authorization` value for a request to `endpoint`.
    public func authorization(for endpoint: PushEndpoint, now: Date = Date()) -> String {
        "vapid t=\(token(audience: endpoint.origin, now: now)), k=\(publicKey)"
    }

    /// The token for the origin `audience`, the cached one while it has more than `renewal`
    /// left (and was not made in what is now the future: a clock set back).
    public func token(audience: String, now: Date = Date()) -> String {
        tokens.withLock { tokens in
            if let cached = tokens[audience], cached.expires.timeIntervalSince(now) > Self.renewal,
                cached.expires.timeIntervalSince(now) <= Self.lifetime
            {
                return cached.jwt
            }
            if tokens.count >= Self.cachedOrigins {
                tokens = tokens.filter { $0.value.expires.timeIntervalSince(now) > Self.renewal }
                if tokens.count >= Self.cachedOrigins { tokens.removeAll() }
            }
            let expires = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + Self.lifetime).rounded(.down))
            let fresh = Token(jwt: make(audience: audience, expires: expires), expires: expires)
            tokens[audience] = fresh
            return fresh.jwt
        }
    }

    private func make(audience: String, expires: Date) -> String {
        let header = JSONValue.object([("typ", .string("JWT")), ("alg", .string("ES256"))])
        let claims = JSONValue.object([
            ("aud", .string(audience)), ("exp", .number(String(Int64(expires.timeIntervalSince1970)))),
            ("sub", .string(subject)),
        ])
        let signingInput = Base64URL.encode(header.bytes) + "." + Base64URL.encode(claims.bytes)
        // ES256 in a JWS is the raw R‖S pair (RFC 7518 §3.4), not DER.
        let signature = (try? key.signature(for: Array(signingInput.utf8)))?.rawRepresentation ?? Data()
        return signingInput + "." + Base64URL.encode(Array(signature))
    }

    /// The origin of a push endpoint (RFC 6454 §6.2), as `PushEndpoint` reads it: `https`,
    /// the host in its canonical spelling, the port when it is not 443; nil for a text that
    /// is not a push endpoint.
    public static func origin(of endpoint: String) -> String? {
        (try? PushEndpoint(endpoint))?.origin
    }
}
