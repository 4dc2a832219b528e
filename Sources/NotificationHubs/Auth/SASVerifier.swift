import Crypto
import Foundation

/// The claims a rule grants. Manage implies Send and Listen.
public struct AccessRights: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let listen = AccessRights(rawValue: 1)
    public static let send = AccessRights(rawValue: 2)
    public static let manage = AccessRights(rawValue: 4)
    public static let full: AccessRights = [.listen, .send, .manage]

    /// Whether these rights allow what `needed` asks for (Manage covers everything).
    public func allow(_ needed: AccessRights) -> Bool {
        contains(.manage) || isSuperset(of: needed)
    }

    /// Rights from their names as Azure lists them (`Listen,Send,Manage`, any case, comma or
    /// space separated); nil when a name is none of those or none is given.
    public init?(names: String) {
        var rights: AccessRights = []
        for name in names.split(whereSeparator: { $0 == "," || $0 == " " }) {
            switch name.lowercased() {
            case "listen": rights.insert(.listen)
            case "send": rights.insert(.send)
            case "manage": rights.insert(.manage)
            default: return nil
            }
        }
        guard !rights.isEmpty else { return nil }
        self = rights
    }

    public var description: String {
        var names: [String] = []
        if contains(.listen) { names.append("Listen") }
        if contains(.send) { names.append("Send") }
        if contains(.manage) { names.append("Manage") }
        return names.joined(separator: ",")
    }
}

/// An authorization rule of a hub: a name, its keys and its rights.
public struct AuthorizationRule: Sendable, Hashable {
    public var name: String
    public var primaryKey: String
    public var secondaryKey: String?
    public var rights: AccessRights

    public init(name: String, primaryKey: String, secondaryKey: String? = nil, rights: AccessRights) {
        self.name = name
        self.primaryKey = primaryKey
        self.secondaryKey = secondaryKey
        self.rights = rights
    }

    /// The rule apps ship with: Listen only.
    public static let listenRuleName = "DefaultListenSharedAccessSignature"
    /// The rule back ends use: Listen, Send and Manage.
    public static let fullRuleName = "DefaultFullSharedAccessSignature"
}

/// Checks SAS tokens the way the service does (wire spec §3.3).
public struct SASVerifier: Sendable {
    public var rules: [String: AuthorizationRule]
    /// How far past `se` a token is still taken, for clocks that disagree a little.
    public var clockSkew: TimeInterval

    public init(rules: [AuthorizationRule], clockSkew: TimeInterval = 30) {
        self.rules = Dictionary(rules.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.clockSkew = clockSkew
    }

    /// A token whose signature checked out: its rule, expiry and normalised audience.
    public struct SignedToken: Sendable, Hashable {
        public let rule: AuthorizationRule
        /// `se`, Unix seconds.
        public let expiry: Double
        /// `sr`, decoded and normalised (see `normalizedAudience`).
        public let audience: String
        /// The key of the rule that signed it (its primary or its secondary): a stream opened
        /// with the token ends when that key is regenerated.
        public let key: String
    }

    /// Verifies `header` for a request to `host` (port ignored) and raw `path`.
    /// Returns the rule that signed it; throws the reason it is refused.
    public func verify(header: String?, host: String, path: String, now: Date = Date()) throws(SASVerificationError)
        -> AuthorizationRule
    {
        let token = try verifySignature(header: header)
        try check(token, host: host, path: path, now: now)
        return token.rule
    }

    /// The first half of verification, which depends on the header alone: its shape, its key
    /// name and its signature. What it returns can be remembered for the same header.
    public func verifySignature(header: String?) throws(SASVerificationError) -> SignedToken {
        guard let header, !header.isEmpty else {
            throw SASVerificationError(.malformed("the request is missing WRAP authorization credentials"))
        }
        let token = try SharedAccessToken(parsing: header)
        guard let keyName = PercentEncoding.decode(token.keyName), let rule = rules[keyName] else {
            throw SASVerificationError(.unknownKey(PercentEncoding.decode(token.keyName) ?? token.keyName))
        }
        guard let signature = PercentEncoding.decode(token.signature) else {
            throw SASVerificationError(.malformed("the signature is not percent-encoded correctly"))
        }
        let keys = [rule.primaryKey] + (rule.secondaryKey.map { [$0] } ?? [])
        let given = Array(signature.utf8)
        let matching = keys.first { key in
            let expected = Array(SharedAccessSignature.sign(encodedResource: token.resource, expiry: token.expiry, key: key).utf8)
            return ConstantTime.equal(expected, given)
        }
        guard let matching else { throw SASVerificationError(.invalidSignature) }
        guard let seconds = Double(token.expiry), seconds.isFinite else {
            throw SASVerificationError(.malformed("the expiry 'se' is not a number of seconds"))
        }
        guard let decodedResource = PercentEncoding.decode(token.resource) else {
            throw SASVerificationError(.malformed("the resource 'sr' is not percent-encoded correctly"))
        }
        return SignedToken(rule: rule, expiry: seconds, audience: Self.normalizedAudience(decodedResource), key: matching)
    }

    /// The second half, which depends on the request and the time: expiry and audience.
    public func check(_ token: SignedToken, host: String, path: String, now: Date = Date()) throws(SASVerificationError) {
        guard token.expiry + clockSkew >= now.timeIntervalSince1970 else { throw SASVerificationError(.expired) }
        guard Self.normalizedAudience(host + path).hasPrefix(token.audience) else { throw SASVerificationError(.invalidAudience) }
    }

    /// Lower-cases and drops scheme, port, query and fragment, and ends the path with `/`:
    /// `HTTPS://NS.servicebus.windows.net:443/Hub?x` → `ns.servicebus.windows.net/hub/`.
    public static func normalizedAudience(_ url: String) -> String {
        var bytes = Array(url.utf8)
        for i in bytes.indices where bytes[i] >= UInt8(ascii: "A") && bytes[i] <= UInt8(ascii: "Z") { bytes[i] += 32 }
        var start = 0
        if bytes.count >= 3 {
            for i in 0..<(bytes.count - 2)
            where bytes[i] == UInt8(ascii: ":") && bytes[i + 1] == UInt8(ascii: "/") && bytes[i + 2] == UInt8(ascii: "/") {
                start = i + 3
                break
            }
        }
        var end = bytes.count
        if let cut = bytes[start...].firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) { end = cut }
        let slash = bytes[start..<end].firstIndex(of: UInt8(ascii: "/")) ?? end
        var hostEnd = slash
        if let colon = bytes[start..<slash].lastIndex(of: UInt8(ascii: ":")), !bytes[colon..<slash].contains(UInt8(ascii: "]")) {
            hostEnd = colon
        }
        var result = Array(bytes[start..<hostEnd])
        if slash < end { result += bytes[slash..<end] } else { result.append(UInt8(ascii: "/")) }
        if result.last != UInt8(ascii: "/") { result.append(UInt8(ascii: "/")) }
        return String(decoding: result, as: UTF8.self)
    }

}

/// Why a token was refused. The description is the service's detail text.
public struct SASVerificationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The failure, for callers that act on it.
    public enum Reason: String, Sendable, Equatable {
        case malformed = "MalformedToken"
        case unknownKey = "UnknownKey"
        case invalidSignature = "InvalidSignature"
        case expired = "ExpiredToken"
        case invalidAudience = "InvalidAudience"
    }

    enum Code: Sendable, Equatable {
        case malformed(String)
        case unknownKey(String)
        case invalidSignature
        case expired
        case invalidAudience
    }

    let code: Code

    init(_ code: Code) {
        self.code = code
    }

    public var reason: Reason {
        switch code {
        case .malformed: return .malformed
        case .unknownKey: return .unknownKey
        case .invalidSignature: return .invalidSignature
        case .expired: return .expired
        case .invalidAudience: return .invalidAudience
        }
    }

    public var description: String {
        switch code {
        case .malformed(let why):
            return "MalformedToken: Invalid authorization header: \(why)."
        case .unknownKey(let name):
            return "UnknownKey: The authorization rule '\(name)' does not exist on this entity."
        case .invalidSignature:
            return "InvalidSignature: The token has an invalid signature."
        case .expired:
            return "ExpiredToken: The token is expired."
        case .invalidAudience:
            return "InvalidAudience: The authorization header contains a token with a wrong audience."
        }
    }
}
