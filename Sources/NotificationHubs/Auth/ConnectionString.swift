import Foundation

/// A Notification Hubs connection string:
/// `Endpoint=sb://<namespace>.servicebus.windows.net/;SharedAccessKeyName=<rule>;SharedAccessKey=<key>`.
public struct ConnectionString: Sendable, Hashable, CustomStringConvertible {
    /// The `Endpoint` part exactly as given.
    public let endpoint: String
    /// `SharedAccessKeyName`: the authorization rule's name.
    public let keyName: String
    /// `SharedAccessKey`: the key string (never base64-decoded; its bytes key the HMAC).
    public let key: String
    /// `EntityPath`: the hub name, when the string names one.
    public let entityPath: String?
    /// The scheme requests use: `https` for `sb://` and `https://`, `http` for `http://`.
    public let scheme: String
    /// The namespace host, lower-cased.
    public let host: String
    /// The port, when the endpoint names one.
    public let port: Int?

    /// Whether the endpoint is this machine (a local hub): `localhost`, 127.x.y.z or `::1`.
    public var isLoopback: Bool {
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        let ipv4 = octets.count == 4 && octets.allSatisfy { UInt8($0) != nil }
        return host == "localhost" || (ipv4 && octets[0] == "127") || host == "[::1]" || host == "::1"
    }

    /// The service root, e.g. `https://ns.servicebus.windows.net/` (hubs live at the root).
    public var serviceRoot: String {
        "\(scheme)://\(host)\(port.map { ":\($0)" } ?? "")/"
    }

    /// The hub's URL without a trailing slash, e.g. `https://ns.servicebus.windows.net/hub`.
    public func hubURL(_ hubName: String) -> String {
        serviceRoot + hubName
    }

    public var description: String {
        var parts = [
            "Endpoint=\(endpoint)", "SharedAccessKeyName=\(keyName)", "SharedAccessKey=\(key)",
        ]
        if let entityPath { parts.append("EntityPath=\(entityPath)") }
        return parts.joined(separator: ";")
    }

    /// Makes a connection string from its parts.
    public init(endpoint: String, keyName: String, key: String, entityPath: String? = nil) throws(ConnectionStringError) {
        var text = "Endpoint=\(endpoint);SharedAccessKeyName=\(keyName);SharedAccessKey=\(key)"
        if let entityPath { text += ";EntityPath=\(entityPath)" }
        try self.init(parsing: text)
    }

    /// Parses a connection string. Parts are split on their first `=`, names are
    /// case-insensitive, empty segments (a trailing `;`) are ignored and unknown names are
    /// skipped; a missing or malformed part is an error that names it.
    public init(parsing text: String) throws(ConnectionStringError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw ConnectionStringError(.empty) }
        var parts: [String: String] = [:]
        for segment in trimmed.split(separator: ";", omittingEmptySubsequences: true) {
            let piece = segment.trimmingCharacters(in: .whitespaces)
            if piece.isEmpty { continue }
            guard let equals = piece.firstIndex(of: "=") else {
                throw ConnectionStringError(.segmentWithoutValue(String(piece.prefix(40))))
            }
            let name = piece[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let value = String(piece[piece.index(after: equals)...]).trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else { throw ConnectionStringError(.segmentWithoutValue(String(piece.prefix(40)))) }
            if parts[name] != nil { throw ConnectionStringError(.duplicate(Self.canonicalName(name))) }
            parts[name] = value
        }
        for required in ["endpoint", "sharedaccesskeyname", "sharedaccesskey"] {
            guard let value = parts[required] else { throw ConnectionStringError(.missing(Self.canonicalName(required))) }
            guard !value.isEmpty else { throw ConnectionStringError(.malformed(Self.canonicalName(required), "it is empty")) }
        }
        let endpoint = parts["endpoint"]!
        guard let components = URLComponents(string: endpoint), let rawScheme = components.scheme?.lowercased() else {
            throw ConnectionStringError(
                .malformed("Endpoint", "'\(endpoint)' is not a URL such as sb://<namespace>.servicebus.windows.net/"))
        }
        switch rawScheme {
        case "sb", "https": scheme = "https"
        case "http": scheme = "http"
        default:
            throw ConnectionStringError(.malformed("Endpoint", "the scheme '\(rawScheme)' is not sb, https or http"))
        }
        guard let host = components.host, !host.isEmpty else {
            throw ConnectionStringError(.malformed("Endpoint", "'\(endpoint)' has no host"))
        }
        let keyName = parts["sharedaccesskeyname"]!
        let key = parts["sharedaccesskey"]!
        guard keyName.count <= 256 else {
            throw ConnectionStringError(.malformed("SharedAccessKeyName", "it is longer than 256 characters"))
        }
        guard key.count <= 256 else {
            throw ConnectionStringError(.malformed("SharedAccessKey", "it is longer than 256 characters"))
        }
        guard !keyName.contains(where: { $0.isWhitespace || $0 == "&" }) else {
            throw ConnectionStringError(.malformed("SharedAccessKeyName", "it contains spaces or '&'"))
        }
        if let entityPath = parts["entitypath"], entityPath.isEmpty {
            throw ConnectionStringError(.malformed("EntityPath", "it is empty"))
        }
        self.endpoint = endpoint
        self.keyName = keyName
        self.key = key
        self.entityPath = parts["entitypath"]
        self.host = host.lowercased()
        self.port = components.port
    }

    private static func canonicalName(_ lowercased: String) -> String {
        switch lowercased {
        case "endpoint": return "Endpoint"
        case "sharedaccesskeyname": return "SharedAccessKeyName"
        case "sharedaccesskey": return "SharedAccessKey"
        case "entitypath": return "EntityPath"
        default: return lowercased
        }
    }
}

/// Why a connection string was refused; the description names the part.
public struct ConnectionStringError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Code: Sendable, Equatable {
        case empty
        case missing(String)
        case malformed(String, String)
        case duplicate(String)
        case segmentWithoutValue(String)
    }

    let code: Code

    init(_ code: Code) {
        self.code = code
    }

    /// The part the error is about (`Endpoint`, `SharedAccessKey`, …), when there is one.
    public var part: String? {
        switch code {
        case .empty, .segmentWithoutValue: return nil
        case .missing(let part), .duplicate(let part), .malformed(let part, _): return part
        }
    }

    public var description: String {
        switch code {
        case .empty:
            return "the connection string is empty"
        case .missing(let part):
            return "the connection string has no \(part)= part"
        case .malformed(let part, let why):
            return "the connection string's \(part) is malformed: \(why)"
        case .duplicate(let part):
            return "the connection string names \(part) twice"
        case .segmentWithoutValue(let segment):
            return "the connection string has a part without '=': '\(segment)'"
        }
    }
}
