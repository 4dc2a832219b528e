import Crypto
import Foundation
import LocalHubSupport
import NotificationHubs

/// The keys of every hub a server serves: one Listen and one Full rule per hub, made on
/// first start (random, base64) and kept in `keys.json` with file mode 0600.
public struct HubKeys: Sendable, Equatable {
    /// Hub name → rule name → key.
    public private(set) var keys: [String: [String: String]]

    public static let fileName = "keys.json"

    /// The two default rules of a hub.
    public func rules(hub: String) -> [AuthorizationRule] {
        guard let hubKeys = keys.first(where: { $0.key.lowercased() == hub.lowercased() })?.value else { return [] }
        var rules: [AuthorizationRule] = []
        if let listen = hubKeys[AuthorizationRule.listenRuleName] {
            rules.append(AuthorizationRule(name: AuthorizationRule.listenRuleName, primaryKey: listen, rights: .listen))
        }
        if let full = hubKeys[AuthorizationRule.fullRuleName] {
            rules.append(AuthorizationRule(name: AuthorizationRule.fullRuleName, primaryKey: full, rights: .full))
        }
        return rules
    }

    /// The key of one rule of one hub.
    public func key(hub: String, rule: String) -> String? {
        keys.first(where: { $0.key.lowercased() == hub.lowercased() })?.value[rule]
    }

    /// Reads the keys in `directory`, adding keys for hubs that have none, and writes them
    /// back (atomically, mode 0600) when anything was added.
    public static func loadOrCreate(in directory: URL, hubs: [String]) throws -> HubKeys {
        let url = directory.appendingPathComponent(fileName)
        var keys: [String: [String: String]] = [:]
        if FileManager.default.fileExists(atPath: url.path) {
            keys = try read(url)
        }
        var changed = false
        for hub in hubs where keys.keys.first(where: { $0.lowercased() == hub.lowercased() }) == nil {
            keys[hub] = [
                AuthorizationRule.listenRuleName: makeKey(),
                AuthorizationRule.fullRuleName: makeKey(),
            ]
            changed = true
        }
        if changed { try write(keys, to: url) }
        return HubKeys(keys: keys)
    }

    /// The keys kept in a shared store, this folder's added for hubs it has none for; the
    /// folder's key file is rewritten when they differ.
    func sharing(through store: any SharedHubStore, in directory: URL) async throws -> HubKeys {
        let shared = HubKeys(keys: try await store.sharedKeys(adding: keys))
        if shared != self { try Self.write(shared.keys, to: directory.appendingPathComponent(Self.fileName)) }
        return shared
    }

    static func read(_ url: URL) throws -> [String: [String: String]] {
        try LocalHubKeyFile.read(url)
    }

    static func write(_ keys: [String: [String: String]], to url: URL) throws {
        try AtomicFile.write(Data(LocalHubKeyFile.encode(keys).utf8), to: url, permissions: 0o600)
    }

    /// 32 random bytes, base64: the shape of the service's keys.
    static func makeKey() -> String {
        Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
    }
}
