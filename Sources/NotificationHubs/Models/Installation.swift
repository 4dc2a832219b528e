/// A device installation (wire spec §4.2).
public struct Installation: Sendable, Hashable {
    public var installationId: String
    public var userId: String?
    public var platform: Platform
    public var pushChannel: PushChannel?
    /// Read-only on the service: set when the push service reports the channel dead.
    public var pushChannelExpired: Bool?
    /// W3C date; the service reports `9999-12-31T23:59:59.9999999Z` for "never".
    public var expirationTime: String?
    public var lastActiveOn: String?
    public var lastUpdate: String?
    public var tags: [String]?
    public var pushVariables: [String: String]?
    public var templates: [String: InstallationTemplate]?
    public var secondaryTiles: [String: JSONValue]?

    public init(
        installationId: String,
        platform: Platform,
        pushChannel: String?,
        tags: [String]? = nil,
        templates: [String: InstallationTemplate]? = nil,
        userId: String? = nil
    ) {
        self.installationId = installationId
        self.platform = platform
        self.pushChannel = pushChannel.map(PushChannel.handle)
        self.tags = tags
        self.templates = templates
        self.userId = userId
    }
}

/// A push channel: a device handle, or a browser's Web Push subscription.
public enum PushChannel: Sendable, Hashable {
    case handle(String)
    case browser(endpoint: String, p256dh: String, auth: String)

    /// The handle, or the browser endpoint.
    public var handle: String {
        switch self {
        case .handle(let h): return h
        case .browser(let endpoint, _, _): return endpoint
        }
    }
}

/// A template of an installation.
public struct InstallationTemplate: Sendable, Hashable {
    public var body: String?
    public var headers: [String: String]?
    public var expiry: String?
    public var tags: [String]?

    public init(body: String?, headers: [String: String]? = nil, expiry: String? = nil, tags: [String]? = nil) {
        self.body = body
        self.headers = headers
        self.expiry = expiry
        self.tags = tags
    }
}

/// Why an installation, a registration or a patch was refused.
public struct InstallationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

// MARK: - JSON

extension Installation {
    /// Reads an installation as any official SDK sends it: member names in any case
    /// (`userID`), explicit `null`s, string or object push channels.
    public init(json: JSONValue) throws(InstallationError) {
        let reader = try MemberReader(json, what: "installation")
        guard let id = try reader.string("installationId"), !id.isEmpty else {
            throw InstallationError("the installation has no installationId")
        }
        guard let platformText = try reader.string("platform") else {
            throw InstallationError("the installation has no platform")
        }
        guard let platform = Platform(wireValue: platformText) else {
            throw InstallationError(
                "the platform '\(platformText)' is not one of apns, wns, mpns, gcm, fcmV1, adm, baidu, browser, xiaomi")
        }
        self.installationId = id
        self.platform = platform
        self.userId = try reader.string("userId")
        self.pushChannelExpired = try reader.bool("pushChannelExpired")
        self.expirationTime = try reader.string("expirationTime")
        self.lastActiveOn = try reader.string("lastActiveOn")
        self.lastUpdate = try reader.string("lastUpdate")
        self.tags = try reader.strings("tags")
        self.pushVariables = try reader.stringMap("pushVariables")
        switch reader["pushChannel"] {
        case nil, .null?:
            self.pushChannel = nil
        case .string(let handle)?:
            self.pushChannel = .handle(handle)
        case .object?:
            let channel = try MemberReader(reader["pushChannel"]!, what: "pushChannel")
            guard let endpoint = try channel.string("endpoint"), let p256dh = try channel.string("p256dh"),
                let auth = try channel.string("auth")
            else { throw InstallationError("a browser pushChannel needs endpoint, p256dh and auth") }
            self.pushChannel = .browser(endpoint: endpoint, p256dh: p256dh, auth: auth)
        default:
            throw InstallationError("pushChannel must be a string or a browser subscription object")
        }
        if let templates = reader["templates"], !templates.isNull {
            guard let members = templates.objectMembers else { throw InstallationError("templates must be an object") }
            var result: [String: InstallationTemplate] = [:]
            for (name, value) in members where !value.isNull {
                result[name] = try InstallationTemplate(json: value, name: name)
            }
            self.templates = result
        }
        if let tiles = reader["secondaryTiles"], !tiles.isNull {
            guard let members = tiles.objectMembers else { throw InstallationError("secondaryTiles must be an object") }
            self.secondaryTiles = Dictionary(members, uniquingKeysWith: { _, last in last })
        }
    }

    /// Parses installation JSON text.
    public init(jsonText: some Collection<UInt8>) throws(InstallationError) {
        let json: JSONValue
        do { json = try JSONValue(parsing: jsonText) } catch { throw InstallationError(error.description) }
        try self.init(json: json)
    }

    /// The installation as the service returns it, members in the service's order.
    public var json: JSONValue {
        .object(dropping: [
            ("installationId", .string(installationId)),
            ("userId", userId.map(JSONValue.string)),
            ("pushChannel", pushChannel.map(\.json)),
            ("pushChannelExpired", pushChannelExpired.map(JSONValue.bool)),
            ("platform", .string(platform.rawValue)),
            ("expirationTime", expirationTime.map(JSONValue.string)),
            ("lastActiveOn", lastActiveOn.map(JSONValue.string)),
            ("lastUpdate", lastUpdate.map(JSONValue.string)),
            ("tags", tags.flatMap { $0.isEmpty ? nil : JSONValue.strings($0) }),
            (
                "pushVariables",
                pushVariables.flatMap {
                    $0.isEmpty ? nil : .object($0.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })
                }
            ),
            (
                "templates",
                templates.flatMap { $0.isEmpty ? nil : .object($0.sorted { $0.key < $1.key }.map { ($0.key, $0.value.json) }) }
            ),
            (
                "secondaryTiles",
                secondaryTiles.flatMap { $0.isEmpty ? nil : .object($0.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }) }
            ),
        ])
    }
}

extension PushChannel {
    var json: JSONValue {
        switch self {
        case .handle(let h): return .string(h)
        case .browser(let endpoint, let p256dh, let auth):
            return .object([("endpoint", .string(endpoint)), ("p256dh", .string(p256dh)), ("auth", .string(auth))])
        }
    }
}

extension InstallationTemplate {
    /// Reads a template object; `name` is only for error messages.
    public init(json: JSONValue, name: String) throws(InstallationError) {
        let reader = try MemberReader(json, what: "template '\(name)'")
        self.body = try reader.string("body")
        self.headers = try reader.stringMap("headers")
        self.expiry = try reader.string("expiry")
        self.tags = try reader.strings("tags")
    }

    public var json: JSONValue {
        .object(dropping: [
            ("body", body.map(JSONValue.string)),
            (
                "headers",
                headers.flatMap { $0.isEmpty ? nil : .object($0.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }) }
            ),
            ("expiry", expiry.map(JSONValue.string)),
            ("tags", tags.map(JSONValue.strings)),
        ])
    }
}

/// Reads object members by name ignoring case; `null` reads as absent.
struct MemberReader {
    let members: [String: JSONValue]
    let what: String

    init(_ json: JSONValue, what: String) throws(InstallationError) {
        guard let members = json.objectMembers else { throw InstallationError("the \(what) must be a JSON object") }
        var map: [String: JSONValue] = [:]
        for (key, value) in members { map[key.lowercased()] = value }
        self.members = map
        self.what = what
    }

    subscript(name: String) -> JSONValue? { members[name.lowercased()] }

    func string(_ name: String) throws(InstallationError) -> String? {
        switch self[name] {
        case nil, .null?: return nil
        case .string(let s)?: return s
        default: throw InstallationError("\(name) of the \(what) must be a string")
        }
    }

    func bool(_ name: String) throws(InstallationError) -> Bool? {
        switch self[name] {
        case nil, .null?: return nil
        case .bool(let b)?: return b
        case .string(let s)? where s.lowercased() == "true" || s.lowercased() == "false": return s.lowercased() == "true"
        default: throw InstallationError("\(name) of the \(what) must be true or false")
        }
    }

    func strings(_ name: String) throws(InstallationError) -> [String]? {
        switch self[name] {
        case nil, .null?: return nil
        case .array(let elements)?:
            var result: [String] = []
            for element in elements {
                guard case .string(let s) = element else {
                    throw InstallationError("\(name) of the \(what) must be an array of strings")
                }
                result.append(s)
            }
            return result
        default: throw InstallationError("\(name) of the \(what) must be an array of strings")
        }
    }

    func stringMap(_ name: String) throws(InstallationError) -> [String: String]? {
        switch self[name] {
        case nil, .null?: return nil
        case .object(let members)?:
            var result: [String: String] = [:]
            for (key, value) in members {
                switch value {
                case .string(let s): result[key] = s
                case .null: continue
                default: throw InstallationError("\(name).\(key) of the \(what) must be a string")
                }
            }
            return result
        default: throw InstallationError("\(name) of the \(what) must be an object of strings")
        }
    }
}
