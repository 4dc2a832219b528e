import Crypto
import Foundation

/// Shared Access Signature tokens: `SharedAccessSignature sr=…&sig=…&se=…&skn=…`.
public enum SharedAccessSignature {
    /// The literal that starts every token.
    public static let prefix = "SharedAccessSignature "
    /// The latest expiry a token is made with, 9999-12-31T23:59:59Z: a longer lifetime is
    /// clipped to it.
    public static let latestExpiry: Int64 = 253_402_300_799
    /// The longest header a token may be. The SDKs' tokens are a few hundred bytes.
    public static let maximumLength = 4096

    /// Makes a token as the Notification Hubs REST tutorial does: `sr` is the lower-cased
    /// resource URL, percent-encoded with lower-case hex; the signature is the base64
    /// HMAC-SHA256 of `sr + "\n" + se`, keyed by the bytes of the key string.
    public static func make(
        resource: String,
        keyName: String,
        key: String,
        lifetime: TimeInterval = 3600,
        now: Date = Date()
    ) -> String {
        let seconds = (now.timeIntervalSince1970 + lifetime).rounded(.down)
        let expiry = seconds.isNaN ? latestExpiry : Int64(min(max(seconds, 0), Double(latestExpiry)))
        return make(encodedResource: PercentEncoding.encode(resource.lowercased()), keyName: keyName, key: key, expiry: expiry)
    }

    /// Makes a token for an already encoded `sr` and an absolute expiry in Unix seconds.
    public static func make(encodedResource sr: String, keyName: String, key: String, expiry: Int64) -> String {
        let signature = sign(encodedResource: sr, expiry: String(expiry), key: key)
        return "\(prefix)sr=\(sr)&sig=\(PercentEncoding.encode(signature))&se=\(expiry)&skn=\(PercentEncoding.encode(keyName))"
    }

    /// The base64 HMAC-SHA256 of `sr + "\n" + se` keyed by the UTF-8 bytes of `key`.
    public static func sign(encodedResource sr: String, expiry se: String, key: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("\(sr)\n\(se)".utf8), using: SymmetricKey(data: Array(key.utf8)))
        return Data(mac).base64EncodedString()
    }

    /// The expiry (`se`) of a token, when it has one that parses; used to renew caches.
    public static func expiry(of token: String) -> Date? {
        guard let fields = try? SharedAccessToken(parsing: token), let se = Int64(fields.expiry) else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(se))
    }
}

/// The four fields of a SAS token, as they appear in the header (still percent-encoded).
public struct SharedAccessToken: Sendable, Equatable {
    /// `sr`, raw: it is what was signed.
    public let resource: String
    /// `sig`, raw.
    public let signature: String
    /// `se`, raw.
    public let expiry: String
    /// `skn`, raw.
    public let keyName: String

    /// Splits a header value into its fields, in any order.
    public init(parsing header: String) throws(SASVerificationError) {
        guard header.utf8.count <= SharedAccessSignature.maximumLength else {
            throw SASVerificationError(
                .malformed("the token is longer than \(SharedAccessSignature.maximumLength) bytes"))
        }
        guard header.hasPrefix(SharedAccessSignature.prefix) else {
            throw SASVerificationError(.malformed("the Authorization header is not a SharedAccessSignature token"))
        }
        var body = header.utf8.dropFirst(SharedAccessSignature.prefix.utf8.count)[...]
        while body.first == UInt8(ascii: " ") { body = body.dropFirst() }
        while body.last == UInt8(ascii: " ") { body = body.dropLast() }
        var fields: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            guard let equals = pair.firstIndex(of: UInt8(ascii: "=")) else {
                throw SASVerificationError(
                    .malformed("the token field '\(String(decoding: pair.prefix(20), as: UTF8.self))' has no value"))
            }
            let name = String(decoding: pair[..<equals], as: UTF8.self).lowercased()
            if fields[name] != nil { throw SASVerificationError(.malformed("the token repeats '\(name)'")) }
            fields[name] = String(decoding: pair[pair.index(after: equals)...], as: UTF8.self)
        }
        for name in ["sr", "sig", "se", "skn"] where (fields[name] ?? "").isEmpty {
            throw SASVerificationError(.malformed("the token has no '\(name)'"))
        }
        resource = fields["sr"]!
        signature = fields["sig"]!
        expiry = fields["se"]!
        keyName = fields["skn"]!
    }
}
