import Crypto
import Foundation
import LocalHubSupport
import NotificationHubs

/// The authorization rules of every hub a server serves, each with a primary and a secondary
/// key as Azure's rules have: a Listen rule and a Full rule per hub, made on first start
/// (random, 32 bytes in base64), and those added with `breaking-news hub keys add`. Kept in
/// `keys.json` (mode 0600; `LocalHubKeyFile`), and on a cluster in the database too.
public struct HubKeys: Sendable, Equatable {
    public private(set) var contents: LocalHubKeyFile.Contents

    public static let fileName = LocalHubKeyFile.fileName

    public init(contents: LocalHubKeyFile.Contents) {
        self.contents = contents
    }

    /// Grows with every change of the keys.
    public var generation: Int64 { contents.generation }

    /// The rules of one hub (none for a hub without keys).
    public func rules(hub: String) -> [AuthorizationRule] {
        contents.rules(hub: hub) ?? []
    }

    /// The primary key of one rule of one hub.
    public func key(hub: String, rule: String) -> String? {
        contents.rules(hub: hub)?.first { $0.name == rule }?.primaryKey
    }

    /// The two rules every hub starts with, with new keys.
    static func defaultRules() -> [AuthorizationRule] {
        [
            AuthorizationRule(
                name: AuthorizationRule.fullRuleName, primaryKey: makeKey(), secondaryKey: makeKey(), rights: .full),
            AuthorizationRule(
                name: AuthorizationRule.listenRuleName, primaryKey: makeKey(), secondaryKey: makeKey(), rights: .listen),
        ]
    }

    /// Reads the keys in `directory`, upgrading a version-1 file (each rule gets a new
    /// secondary key) and adding the default rules for hubs that have none, and writes them
    /// back (atomically, mode 0600) when anything changed. Refuses keys that are not fit to
    /// sign with (`LocalHubKeyFile.Contents.problems`), saying how to regenerate them.
    public static func loadOrCreate(in directory: URL, hubs: [String]) throws -> HubKeys {
        let url = directory.appendingPathComponent(fileName)
        var keys = HubKeys(contents: LocalHubKeyFile.Contents())
        if FileManager.default.fileExists(atPath: url.path) {
            keys = HubKeys(contents: try LocalHubKeyFile.read(url))
        }
        let changed = keys.completed(hubs: hubs)
        try keys.check(url)
        if changed { try write(keys.contents, to: url) }
        return keys
    }

    /// The keys in `directory` as they are, checked; for a hub that follows changes to the file.
    static func load(in directory: URL) throws -> HubKeys {
        let keys = try read(in: directory)
        try keys.check(directory.appendingPathComponent(fileName))
        return keys
    }

    /// Gives every rule without a secondary key one (a version-1 file's), and `hubs` without
    /// rules the default ones; returns whether anything changed.
    mutating func completed(hubs: [String]) -> Bool {
        var changed = false
        for (hub, rules) in contents.hubs where rules.contains(where: { $0.secondaryKey == nil }) {
            contents.hubs[hub] = rules.map { rule in
                var rule = rule
                if rule.secondaryKey == nil { rule.secondaryKey = Self.makeKey() }
                return rule
            }
            changed = true
        }
        contents.isVersion1 = false
        for hub in hubs where contents.hubName(hub) == nil {
            contents.hubs[hub] = Self.defaultRules()
            changed = true
        }
        return changed
    }

    /// Throws the keys' problems, one per line, naming the file.
    func check(_ url: URL) throws {
        let problems = contents.problems()
        guard problems.isEmpty else {
            throw KeyFileProblem(description: "\(url.path): " + problems.joined(separator: "; "))
        }
    }

    /// The keys kept in a shared store, this folder's added for hubs it has none for; the
    /// folder's key file is rewritten when they differ.
    func sharing(through store: any SharedHubStore, in directory: URL) async throws -> HubKeys {
        let shared = HubKeys(contents: try await store.sharedKeys(adding: contents))
        try shared.check(URL(fileURLWithPath: "the database's keys"))
        if shared != self { try Self.write(shared.contents, to: directory.appendingPathComponent(Self.fileName)) }
        return shared
    }

    static func write(_ contents: LocalHubKeyFile.Contents, to url: URL) throws {
        try AtomicFile.write(Data(LocalHubKeyFile.encode(contents).utf8), to: url, permissions: 0o600)
    }

    /// 32 random bytes, base64: the shape of the service's keys.
    static func makeKey() -> String {
        Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
    }
}

/// Keys that are not fit to sign with, or a key file that cannot be read.
public struct KeyFileProblem: Error, CustomStringConvertible, Sendable {
    public let description: String
}

// MARK: - Changing the keys (`breaking-news hub keys`)

extension HubKeys {
    public typealias Slot = LocalHubKeyFile.Slot

    /// A change of the keys the command line asks for.
    public enum Change: Sendable, Equatable {
        case regenerate(rule: String, slot: Slot)
        case add(rule: String, rights: AccessRights)
        case remove(rule: String)
    }

    /// Makes `change` to one hub's rules and moves the generation on; refuses what Azure
    /// refuses (an unknown or existing rule, a thirteenth, bad rights or names) and the
    /// removal of a default rule.
    public mutating func apply(_ change: Change, hub: String) throws(KeyFileProblem) {
        guard let name = contents.hubName(hub), var rules = contents.hubs[name] else {
            throw KeyFileProblem(description: "the hub has no hub named '\(hub)'")
        }
        func index(of rule: String) throws(KeyFileProblem) -> Int {
            guard let index = rules.firstIndex(where: { $0.name == rule }) else {
                throw KeyFileProblem(
                    description: "hub '\(name)' has no rule named '\(rule)' (it has \(rules.map(\.name).joined(separator: ", ")))"
                )
            }
            return index
        }
        switch change {
        case .regenerate(let rule, let slot):
            let at = try index(of: rule)
            switch slot {
            case .primary: rules[at].primaryKey = Self.makeKey()
            case .secondary: rules[at].secondaryKey = Self.makeKey()
            }
        case .add(let rule, let rights):
            if let problem = LocalHubKeyFile.ruleNameProblem(rule) { throw KeyFileProblem(description: problem) }
            if let problem = LocalHubKeyFile.rightsProblem(rights) { throw KeyFileProblem(description: problem) }
            guard !rules.contains(where: { $0.name.lowercased() == rule.lowercased() }) else {
                throw KeyFileProblem(description: "hub '\(name)' has a rule named '\(rule)' already")
            }
            guard rules.count < LocalHubKeyFile.maximumRules else {
                throw KeyFileProblem(
                    description: "hub '\(name)' has \(rules.count) rules, the most a hub may have (as in Azure); remove one first"
                )
            }
            rules.append(AuthorizationRule(name: rule, primaryKey: Self.makeKey(), secondaryKey: Self.makeKey(), rights: rights))
            rules.sort { $0.name < $1.name }
        case .remove(let rule):
            let at = try index(of: rule)
            guard rule != AuthorizationRule.listenRuleName, rule != AuthorizationRule.fullRuleName else {
                throw KeyFileProblem(
                    description:
                        "'\(rule)' is a default rule, which the terminals of this machine use: it cannot be removed; regenerate its keys instead"
                )
            }
            rules.remove(at: at)
        }
        contents.hubs[name] = rules
        contents.generation += 1
    }
}

// MARK: - The keys of a data folder, changed by a command

extension HubKeys {
    /// Makes `change` to the keys in `directory` and writes them (atomically, mode 0600),
    /// holding the folder locked against another such command meanwhile; a running hub
    /// serves them within a moment (`KeyWatcher`). Returns the keys written.
    public static func change(_ change: Change, hub: String, in directory: URL) throws -> HubKeys {
        let url = directory.appendingPathComponent(fileName)
        let lock: FileLock
        do {
            lock = try FileLock(folder: directory, waiting: true)
        } catch {
            throw KeyFileProblem(description: "\(error)")
        }
        defer { lock.release() }
        var keys: HubKeys
        do {
            keys = try read(in: directory)
        } catch let problem as KeyFileProblem {
            throw problem
        } catch {
            throw KeyFileProblem(description: "\(error)")
        }
        try keys.apply(change, hub: hub)
        try keys.check(url)
        try write(keys.contents, to: url)
        return keys
    }

    /// The keys in `directory` for a command to list, upgraded as the hub would read them
    /// (not written).
    public static func read(in directory: URL) throws -> HubKeys {
        let url = directory.appendingPathComponent(fileName)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw KeyFileProblem(
                description: "there are no keys in \(directory.path) yet (the hub makes them on its first start)")
        }
        var keys = HubKeys(contents: try LocalHubKeyFile.read(url))
        _ = keys.completed(hubs: [])
        return keys
    }
}
