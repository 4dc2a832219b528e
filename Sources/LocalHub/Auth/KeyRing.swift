import Foundation
import NotificationHubs
import Synchronization

/// The keys a running hub serves, and a verifier per hub on them. Replaced whole when the
/// keys change (`KeyWatcher`): from then on a token signed with a key that is gone is
/// refused, and the verified tokens remembered for the old keys are forgotten with them.
final class KeyRing: Sendable {
    private struct Current {
        var keys: HubKeys
        var verifiers: [String: VerifiedTokens]
    }

    private let current: Mutex<Current>
    private let hubs: [String]
    private let clockSkew: TimeInterval

    init(keys: HubKeys, hubs: [String], clockSkew: TimeInterval) {
        self.hubs = hubs
        self.clockSkew = clockSkew
        current = Mutex(Current(keys: keys, verifiers: Self.verifiers(keys, hubs: hubs, clockSkew: clockSkew)))
    }

    private static func verifiers(_ keys: HubKeys, hubs: [String], clockSkew: TimeInterval) -> [String: VerifiedTokens] {
        var verifiers: [String: VerifiedTokens] = [:]
        for hub in hubs {
            verifiers[hub.lowercased()] = VerifiedTokens(verifier: SASVerifier(rules: keys.rules(hub: hub), clockSkew: clockSkew))
        }
        return verifiers
    }

    var keys: HubKeys { current.withLock { $0.keys } }

    /// The verifier of one hub's tokens; nil for a hub this server does not serve.
    func verifier(hub: String) -> VerifiedTokens? {
        current.withLock { $0.verifiers[hub.lowercased()] }
    }

    /// Serves `keys` from now on; false when they are the keys served already.
    func replace(with keys: HubKeys) -> Bool {
        guard keys != self.keys else { return false }
        let verifiers = Self.verifiers(keys, hubs: hubs, clockSkew: clockSkew)
        current.withLock { $0 = Current(keys: keys, verifiers: verifiers) }
        return true
    }

    /// Whether a token signed with `credential` would still be taken: its rule is there and
    /// the key is one of the rule's two.
    func isValid(_ credential: StreamCredential) -> Bool {
        let rules = current.withLock { $0.keys.rules(hub: credential.hub) }
        guard let rule = rules.first(where: { $0.name == credential.rule }) else { return false }
        return rule.primaryKey == credential.key || rule.secondaryKey == credential.key
    }
}
