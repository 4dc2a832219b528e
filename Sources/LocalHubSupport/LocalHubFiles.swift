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
    /// The generation of the keys it serves (`LocalHubKeyFile.Contents.generation`): a
    /// command that changed the keys waits until the hub says it serves them.
    public var keysGeneration: Int64?
    /// The node's name when the hub is a node of a cluster (its keys are kept in the
    /// database, not in this folder's `keys.json`, which is a copy); nil for a single hub.
    public var node: String?

    public init(
        pid: Int32, url: String, hubs: [String], tls: Bool, started: String, secret: String?, retention: Double? = nil,
        deliveryLogBytes: Int64? = nil, keysGeneration: Int64? = nil, node: String? = nil
    ) {
        self.node = node
        self.keysGeneration = keysGeneration
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
            ("keysGeneration", keysGeneration.map { .number(String($0)) }), ("node", node.map(JSONValue.string)),
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
            retention: number("retention").map(Double.init), deliveryLogBytes: number("deliveryLogBytes"),
            keysGeneration: number("keysGeneration"), node: json["node"]?.stringValue)
    }

    /// Writes the state file, readable by its owner only.
    public func write(to url: URL) throws {
        try AtomicFile.write(Data(json.text.utf8), to: url, permissions: 0o600)
    }
}

/// The local hub's key file, `keys.json`, version 2:
/// `{"version": 2, "generation": N, "hubs": {hub: {rule: {"rights": "Listen,Send,Manage",
/// "primaryKey": …, "secondaryKey": …}}}}`. Each rule has two keys, as Azure's rules do, so
/// one can be regenerated while clients move to the other; `generation` grows with every
/// change, and a running hub says in its state file which one it serves
/// (`LocalHubState.keysGeneration`). Version 1 (`{"hubs": {hub: {rule: key}}}`, one key per
/// rule) is read too; the hub upgrades it on its first start.
public enum LocalHubKeyFile {
    public static let fileName = "keys.json"
    public static let version = 2
    /// Azure's limit of authorization rules per hub.
    public static let maximumRules = 12
    /// The shortest key taken: an HMAC-SHA256 key of fewer bytes is guessable sooner than the
    /// hash; the hub makes keys of 32 random bytes in base64 (44 characters).
    public static let minimumKeyBytes = 32
    public static let maximumKeyBytes = 256

    /// Which of a rule's two keys.
    public enum Slot: String, Sendable, CaseIterable {
        case primary, secondary
    }

    /// What a key file holds.
    public struct Contents: Sendable, Equatable {
        /// Grows with every change (1 for a new or upgraded file).
        public var generation: Int64
        /// Hub name → its rules.
        public var hubs: [String: [AuthorizationRule]]
        /// Read from a version-1 file: rules without a secondary key, to be upgraded.
        public var isVersion1 = false

        public init(generation: Int64 = 1, hubs: [String: [AuthorizationRule]] = [:]) {
            self.generation = generation
            self.hubs = hubs
        }

        /// The name `hub` has in the file (hub names are matched without case).
        public func hubName(_ hub: String) -> String? {
            hubs.keys.first { $0.lowercased() == hub.lowercased() }
        }

        /// The rules of one hub; nil when the file has none for it.
        public func rules(hub: String) -> [AuthorizationRule]? {
            hubName(hub).flatMap { hubs[$0] }
        }

        /// One key of one rule of one hub.
        public func key(hub: String, rule: String, slot: Slot) -> String? {
            guard let rule = rules(hub: hub)?.first(where: { $0.name == rule }) else { return nil }
            return slot == .primary ? rule.primaryKey : rule.secondaryKey
        }

        /// The Listen and Full connection strings of `hub` at `baseURL`, signed with the
        /// default rules' `slot` keys; nil when the hub or one of those keys is missing.
        public func connectionStrings(hub: String, baseURL: String, slot: Slot) -> (listen: String, full: String)? {
            guard let listen = key(hub: hub, rule: AuthorizationRule.listenRuleName, slot: slot),
                let full = key(hub: hub, rule: AuthorizationRule.fullRuleName, slot: slot)
            else { return nil }
            return (
                LocalHubKeyFile.connectionString(baseURL: baseURL, hub: hub, rule: AuthorizationRule.listenRuleName, key: listen),
                LocalHubKeyFile.connectionString(baseURL: baseURL, hub: hub, rule: AuthorizationRule.fullRuleName, key: full)
            )
        }

        /// The primary key of each rule of one hub, by rule name: what clients sign with.
        public subscript(hub: String) -> [String: String]? {
            rules(hub: hub).map { Dictionary($0.map { ($0.name, $0.primaryKey) }, uniquingKeysWith: { first, _ in first }) }
        }

        /// What is wrong with the keys (empty when nothing): keys too short or not text a
        /// connection string can carry, rule names, rights, too many rules. Each line names
        /// the hub and rule, and says how to fix it.
        public func problems() -> [String] {
            var problems: [String] = []
            for (hub, rules) in hubs.sorted(by: { $0.key < $1.key }) {
                if let problem = LocalHubKeyFile.hubNameProblem(hub) { problems.append(problem) }
                if rules.count > maximumRules {
                    problems.append("hub '\(hub)' has \(rules.count) rules; at most \(maximumRules) are allowed")
                }
                // A rule is its name and its rights: a key two rules share signs for both (the
                // Listen key every app ships, signing for a rule that grants more), and names
                // that differ only in case are one name to Azure.
                var names: [String: String] = [:]
                var keys: [String: String] = [:]
                for rule in rules {
                    if let other = names.updateValue(rule.name, forKey: rule.name.lowercased()) {
                        problems.append("hub '\(hub)': the rules '\(other)' and '\(rule.name)' differ only in case")
                    }
                    for key in Set([rule.primaryKey] + (rule.secondaryKey.map { [$0] } ?? [])) {
                        if let other = keys.updateValue(rule.name, forKey: key) {
                            problems.append(
                                "hub '\(hub)': the rules '\(other)' and '\(rule.name)' share a key, which signs for both; "
                                    + "make a new one with 'breaking-news hub keys regenerate \(rule.name)'")
                        }
                    }
                }
                for rule in rules {
                    if let problem = LocalHubKeyFile.ruleNameProblem(rule.name) {
                        problems.append("hub '\(hub)': \(problem)")
                    }
                    if let problem = LocalHubKeyFile.rightsProblem(rule.rights) {
                        problems.append("hub '\(hub)', rule '\(rule.name)': \(problem)")
                    } else if rule.name == AuthorizationRule.listenRuleName, rule.rights != .listen {
                        problems.append(
                            "hub '\(hub)', rule '\(rule.name)' grants \(rule.rights): the default Listen rule is the key "
                                + "every app ships, and must grant Listen only; set its rights to \"Listen\" in the key file "
                                + "(or add a rule of its own for what needs more: 'breaking-news hub keys add')")
                    }
                    for (slot, key) in [("primary", rule.primaryKey), ("secondary", rule.secondaryKey)] {
                        guard let key, let problem = LocalHubKeyFile.keyProblem(key) else { continue }
                        problems.append(
                            "hub '\(hub)', rule '\(rule.name)': its \(slot) key \(problem); make a new one with "
                                + "'breaking-news hub keys regenerate \(rule.name) --key \(slot)'")
                    }
                }
            }
            return problems
        }
    }

    /// Why `name` cannot name a hub (1 to 256 ASCII letters, digits, `-`, `_` and `.`: what
    /// `hub serve --hub` takes, and what a path and a log line carry as it is), or nil.
    public static func hubNameProblem(_ name: String) -> String? {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
        guard !name.isEmpty, name.utf8.count <= 256, allowed else {
            let shown = String(name.unicodeScalars.prefix(60).map { $0.isASCII && $0.value >= 0x20 ? Character($0) : "?" })
            return "the hub name '\(shown)' is not 1 to 256 letters, digits, '-', '_' or '.'"
        }
        return nil
    }

    /// Why `name` cannot name a rule (Azure's rule: 1–256 letters, digits, `.`, `-`, `_`), or nil.
    public static func ruleNameProblem(_ name: String) -> String? {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
        guard !name.isEmpty, name.utf8.count <= 256, allowed else {
            return "the rule name '\(name.prefix(60))' is not 1 to 256 letters, digits, '.', '-' or '_'"
        }
        return nil
    }

    /// Why a rule may not have `rights`, or nil: Manage needs Listen and Send too, as in Azure.
    public static func rightsProblem(_ rights: AccessRights) -> String? {
        if rights.isEmpty { return "a rule needs at least one right (Listen, Send, Manage)" }
        if rights.contains(.manage), !rights.isSuperset(of: [.listen, .send]) {
            return "Manage needs Listen and Send too (as in Azure): give it Listen,Send,Manage"
        }
        return nil
    }

    /// Why `key` cannot be a key, or nil.
    public static func keyProblem(_ key: String) -> String? {
        let bytes = key.utf8.count
        if bytes < minimumKeyBytes { return "is \(bytes) bytes, shorter than the \(minimumKeyBytes) a key must have" }
        if bytes > maximumKeyBytes { return "is \(bytes) bytes, longer than the \(maximumKeyBytes) a key may have" }
        if !key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ";") }) {
            return "holds a character a connection string cannot carry (a space, ';' or a control character)"
        }
        return nil
    }

    /// Reads a key file (either version); refuses a file that is not one.
    public static func read(_ url: URL) throws -> Contents {
        let data = try Data(contentsOf: url)
        guard let contents = decode(data) else {
            throw AtomicFileError(
                description: "\(url.path) is not a key file ({\"hubs\": {…}}); move it aside to make new keys")
        }
        return contents
    }

    /// The keys in a key file's text (either version); nil when it is not one. A rule of a
    /// version-1 file takes its rights from its name (the two default rules; other names
    /// granted nothing then, and are dropped).
    public static func decode(_ data: some Collection<UInt8>) -> Contents? {
        guard data.count <= 1 << 20, let json = try? JSONValue(parsing: Data(data)), let hubs = json["hubs"]?.objectMembers
        else { return nil }
        var contents = Contents()
        if case .number(let text)? = json["generation"], let generation = Int64(text), generation > 0 {
            contents.generation = generation
        }
        for (hub, rules) in hubs {
            var parsed: [AuthorizationRule] = []
            for (name, value) in rules.objectMembers ?? [] where !parsed.contains(where: { $0.name == name }) {
                if let key = value.stringValue {
                    contents.isVersion1 = true
                    switch name {
                    case AuthorizationRule.listenRuleName:
                        parsed.append(AuthorizationRule(name: name, primaryKey: key, rights: .listen))
                    case AuthorizationRule.fullRuleName:
                        parsed.append(AuthorizationRule(name: name, primaryKey: key, rights: .full))
                    default: continue
                    }
                } else if let primary = value["primaryKey"]?.stringValue,
                    let rights = value["rights"]?.stringValue.flatMap(AccessRights.init(names:))
                {
                    parsed.append(
                        AuthorizationRule(
                            name: name, primaryKey: primary, secondaryKey: value["secondaryKey"]?.stringValue, rights: rights))
                } else {
                    return nil
                }
            }
            contents.hubs[hub] = parsed.sorted { $0.name < $1.name }
        }
        return contents
    }

    /// The file's text, version 2.
    public static func encode(_ contents: Contents) -> String {
        JSONValue.object([
            ("version", .number(String(version))),
            ("generation", .number(String(contents.generation))),
            (
                "hubs",
                .object(
                    contents.hubs.sorted { $0.key < $1.key }.map { hub, rules in
                        (
                            hub,
                            .object(
                                rules.sorted { $0.name < $1.name }.map { rule in
                                    (
                                        rule.name,
                                        .object(dropping: [
                                            ("rights", .string(rule.rights.description)),
                                            ("primaryKey", .string(rule.primaryKey)),
                                            ("secondaryKey", rule.secondaryKey.map(JSONValue.string)),
                                        ])
                                    )
                                })
                        )
                    })
            ),
        ]).text
    }

    /// The connection string of one rule of a local hub at `baseURL` (`http://127.0.0.1:47474`).
    public static func connectionString(baseURL: String, hub: String, rule: String, key: String) -> String {
        let endpoint = baseURL.hasSuffix("/") ? baseURL : baseURL + "/"
        return "Endpoint=\(endpoint);SharedAccessKeyName=\(rule);SharedAccessKey=\(key);EntityPath=\(hub)"
    }
}
