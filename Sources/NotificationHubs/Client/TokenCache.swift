import Foundation
import Synchronization

/// One SAS token shared by every call, renewed when 80 % of its lifetime has passed.
actor TokenCache {
    let resource: String
    let keyName: String
    let key: String
    let lifetime: TimeInterval
    private var cached: (token: String, renewAt: Date)?

    init(resource: String, keyName: String, key: String, lifetime: TimeInterval) {
        self.resource = resource
        self.keyName = keyName
        self.key = key
        self.lifetime = lifetime
    }

    private struct Key: Hashable {
        let resource: String
        let keyName: String
        let key: String
        let lifetime: TimeInterval
    }

    /// Every client of one hub and key in this process shares one cache, so a client made
    /// per call (a send, a registration) signs a token once an hour, not once per call.
    /// Bounded: past 4,096 keys (a few hundred bytes each) the registry starts over. (It was
    /// 64: a process talking to many hubs at once, the test suite, started over so often that
    /// two clients a second apart signed different tokens.)
    private static let registry = Mutex<[Key: TokenCache]>([:])

    static func shared(resource: String, keyName: String, key: String, lifetime: TimeInterval) -> TokenCache {
        let id = Key(resource: resource, keyName: keyName, key: key, lifetime: lifetime)
        return registry.withLock { caches in
            if let cache = caches[id] { return cache }
            if caches.count >= 4096 { caches.removeAll() }
            let cache = TokenCache(resource: resource, keyName: keyName, key: key, lifetime: lifetime)
            caches[id] = cache
            return cache
        }
    }

    /// The token to sign a call with, and when this cache makes a new one: well before the
    /// token expires, so what it opened (a device stream) can be opened again in time.
    func token(now: Date) -> (token: String, renewAt: Date) {
        if let cached, now < cached.renewAt { return cached }
        let token = SharedAccessSignature.make(resource: resource, keyName: keyName, key: key, lifetime: lifetime, now: now)
        // `se` is in whole seconds, rounded down: 80 % of the time to it.
        let expires = SharedAccessSignature.expiry(of: token) ?? now.addingTimeInterval(lifetime)
        let made = (token: token, renewAt: now.addingTimeInterval(expires.timeIntervalSince(now) * 0.8))
        cached = made
        return made
    }
}
