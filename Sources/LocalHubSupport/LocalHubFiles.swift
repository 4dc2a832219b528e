import Foundation
import NotificationHubs

/// The local hub's well-known defaults, shared by the hub and its clients.
public enum LocalHubDefaults {
    /// The fixed loopback port of the embedded hub.
    public static let port = 47474
    /// The hub every terminal uses unless told otherwise.
    public static let hubName = "breakingnews"
    /// The hub's data folder files.
    public static let stateFileName = LocalHubState.fileName
    public static let keyFileName = LocalHubKeyFile.fileName
    /// Where an embedded hub's output goes (rotated: `hub.log.1` … are the older parts).
    public static let logFileName = "hub.log"
    /// The file a running hub holds locked (and open) for as long as it runs: one hub per folder.
    public static let lockFileName = "hub.lock"
    /// Every file a hub keeps in its data folder, which only its owner may read; nothing
    /// else in the folder is the hub's to change. (The log's older parts: `RotatingLogFile.kept`.)
    public static let dataFiles = [
        stateFileName, keyFileName, logFileName, "hub.log.1", "hub.log.2", "hub.log.3", lockFileName, "hub.sqlite",
        "hub.sqlite-wal", "hub.sqlite-shm", "hub.sqlite-journal", "tls-certificate.pem", "tls-key.pem",
    ]
}

/// What a running hub writes to `hub.json` in its data folder, for clients and for
/// `hub status` / `hub stop`. The file is the owner's alone (0600 in a 0700 folder): its
/// `secret` is what the hub proves it knows before a client trusts whatever answers at `url`.
public struct LocalHubState: Sendable, Equatable {
    public static let fileName = "hub.json"

    public var pid: Int32
    /// Base URL, e.g. `http://127.0.0.1:47474`.
    public var url: String
    public var hubs: [String]
    public var tls: Bool
    public var started: String
    /// Made anew at every start; see `LocalHubProof`. Nil in a file of an earlier version,
    /// whose hub cannot prove itself (`LocalHubTrust` calls it `.legacy`).
    public var secret: String?
    /// Seconds the hub keeps deliveries and ended notifications, and the most bytes its
    /// delivery log may take (nil in a file of an earlier version).
    public var retention: Double?
    public var deliveryLogBytes: Int64?

    public init(
        pid: Int32, url: String, hubs: [String], tls: Bool, started: String, secret: String?, retention: Double? = nil,
        deliveryLogBytes: Int64? = nil
    ) {
        self.retention = retention
        self.deliveryLogBytes = deliveryLogBytes
        self.pid = pid
        self.url = url
        self.hubs = hubs
        self.tls = tls
        self.started = started
        self.secret = secret
    }

    /// The port of `url`, when it names one.
    public var port: Int? {
        guard let components = URLComponents(string: url) else { return nil }
        return components.port ?? (components.scheme == "https" ? 443 : 80)
    }
}

extension LocalHubState {
    public var json: JSONValue {
        .object(dropping: [
            ("pid", .number(String(pid))), ("url", .string(url)), ("hubs", .strings(hubs)), ("tls", .bool(tls)),
            ("started", .string(started)), ("secret", secret.map(JSONValue.string) ?? .null),
            ("retention", retention.map { .number(String(Int64($0))) }),
            ("deliveryLogBytes", deliveryLogBytes.map { .number(String($0)) }),
        ])
    }

    /// Reads a state file; `nil` when it is missing or not one.
    public static func read(_ url: URL) -> LocalHubState? {
        guard let data = try? Data(contentsOf: url), data.count <= 64 * 1024, let json = try? JSONValue(parsing: data),
            let pid = json["pid"].flatMap({ if case .number(let n) = $0 { return Int32(n) } else { return nil } }),
            let base = json["url"]?.stringValue
        else { return nil }
        let secret = json["secret"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        let hubs = json["hubs"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let tls = json["tls"] == .bool(true)
        func number(_ key: String) -> Int64? {
            if case .number(let text)? = json[key] { return Int64(text) } else { return nil }
        }
        return LocalHubState(
            pid: pid, url: base, hubs: hubs, tls: tls, started: json["started"]?.stringValue ?? "", secret: secret,
            retention: number("retention").map(Double.init), deliveryLogBytes: number("deliveryLogBytes"))
    }

    /// Writes the state file, readable by its owner only.
    public func write(to url: URL) throws {
        try AtomicFile.write(Data(json.text.utf8), to: url, permissions: 0o600)
    }
}

/// The local hub's key file, `keys.json`: `{"hubs": {hub: {rule name: key}}}`.
public enum LocalHubKeyFile {
    public static let fileName = "keys.json"

    /// Reads the keys: hub name → rule name → key.
    public static func read(_ url: URL) throws -> [String: [String: String]] {
        let data = try Data(contentsOf: url)
        guard let keys = decode(data) else {
            throw AtomicFileError(description: "\(url.path) is not a key file ({\"hubs\": {…}}); move it aside to make new keys")
        }
        return keys
    }

    /// The keys in a key file's text; nil when it is not one.
    public static func decode(_ data: some Collection<UInt8>) -> [String: [String: String]]? {
        guard let hubs = (try? JSONValue(parsing: Data(data)))?["hubs"]?.objectMembers else { return nil }
        var keys: [String: [String: String]] = [:]
        for (hub, rules) in hubs {
            keys[hub] = Dictionary(
                (rules.objectMembers ?? []).compactMap { name, value in value.stringValue.map { (name, $0) } },
                uniquingKeysWith: { $1 })
        }
        return keys
    }

    public static func encode(_ keys: [String: [String: String]]) -> String {
        JSONValue.object([
            (
                "hubs",
                .object(
                    keys.sorted { $0.key < $1.key }.map { hub, rules in
                        (hub, .object(rules.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }))
                    })
            )
        ]).text
    }

    /// The connection string of one rule of a local hub at `baseURL` (`http://127.0.0.1:47474`).
    public static func connectionString(baseURL: String, hub: String, rule: String, key: String) -> String {
        let endpoint = baseURL.hasSuffix("/") ? baseURL : baseURL + "/"
        return "Endpoint=\(endpoint);SharedAccessKeyName=\(rule);SharedAccessKey=\(key);EntityPath=\(hub)"
    }
}
