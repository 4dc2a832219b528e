import AsyncHTTPClient
import Foundation
import NIOCore
import NotificationHubs
import Synchronization

/// The connections of a Web Push client, one HTTP client per origin of the subscriptions'
/// endpoints. Each origin's host is resolved here (`OutboundAddress`) and its client made to
/// connect to exactly the address that was checked (AsyncHTTPClient's DNS override: the TLS
/// name and the `Host` stay the endpoint's), so no later lookup can send a request
/// elsewhere. An origin's address is looked up again after `addressLifetime` (if that fails,
/// the old one serves up to `staleLifetime`; a name that did not resolve is not asked again
/// for `unresolvedLifetime`); a client whose
/// address changed, or that was not used for `idleLifetime`, is closed once its requests
/// are done. Beyond `maximumOrigins`, the least recently used idle clients are closed; each lets
/// `perOrigin` requests be in flight.
final class WebPushOrigins: Sendable {
    static let addressLifetime: Duration = .seconds(60)
    static let idleLifetime: Duration = .seconds(300)
    static let maximumOrigins = 256
    /// How long an address goes on serving when looking its name up again fails.
    static let staleLifetime: Duration = .seconds(600)
    /// How long a name that did not resolve is not asked again.
    static let unresolvedLifetime: Duration = .seconds(30)

    /// A client lent for one request; give it back with `release`.
    struct Lease: Sendable {
        fileprivate let entry: Entry
        var client: HTTPClient { entry.client }
        var requests: StreamLimit { entry.requests }
        var origin: String { entry.origin }
        /// Whether the origin's last try got no answer in time (`OriginLimit`).
        var isSlow: Bool { entry.slow.load(ordering: .relaxed) }

        /// Notes how a try of the origin ended: with an answer, or none in time.
        func noteAnswered(_ answered: Bool) { entry.slow.store(!answered, ordering: .relaxed) }
    }

    fileprivate final class Entry: Sendable {
        let origin: String
        let client: HTTPClient
        let address: SocketAddress
        let resolved: ContinuousClock.Instant
        let requests: StreamLimit
        let slow: Atomic<Bool>
        /// Requests using it, when it was last used, and whether it is no longer lent.
        let use = Mutex<(users: Int, lastUsed: ContinuousClock.Instant, retired: Bool)>((0, .now, false))

        init(origin: String, client: HTTPClient, address: SocketAddress, perOrigin: Int, slow: Bool) {
            self.origin = origin
            self.client = client
            self.slow = Atomic(slow)
            self.address = address
            resolved = .now
            requests = StreamLimit(perOrigin)
        }
    }

    private let caFile: String?
    private let allowPrivate: Bool
    private let perOrigin: Int
    private let connectTimeout: Int64
    private let entries = Mutex<[String: Entry]>([:])
    /// Origins whose names did not resolve, until when they are not asked again.
    private let unresolved = Mutex<[String: ContinuousClock.Instant]>([:])

    init(caFile: String?, allowPrivate: Bool, perOrigin: Int, connectTimeout: Int64) {
        self.caFile = caFile
        self.allowPrivate = allowPrivate
        self.perOrigin = perOrigin
        self.connectTimeout = connectTimeout
    }

    /// The client for `endpoint`'s origin, resolving its host when needed; the reason when no
    /// request may go there.
    func lease(_ endpoint: PushEndpoint) async -> Result<Lease, OutboundAddress.Failure> {
        let origin = endpoint.origin
        let now = ContinuousClock.now
        if let entry = lend(origin, now: now, fresh: { now - $0.resolved < Self.addressLifetime }) {
            return .success(Lease(entry: entry))
        }
        if unresolved.withLock({ $0[origin].map { now < $0 } ?? false }) { return .failure(.unresolved) }
        let address: SocketAddress
        switch await OutboundAddress.resolve(endpoint, allowPrivate: allowPrivate) {
        case .failure(.unresolved):
            // The resolver failed or was slow: the address checked last goes on serving a
            // while, and the name is not asked again for `unresolvedLifetime`.
            if let entry = lend(origin, now: now, fresh: { now - $0.resolved < Self.staleLifetime }) {
                return .success(Lease(entry: entry))
            }
            unresolved.withLock { unresolved in
                if unresolved.count >= Self.maximumOrigins * 4 { unresolved = unresolved.filter { now < $0.value } }
                if unresolved.count >= Self.maximumOrigins * 4 { unresolved.removeAll() }
                unresolved[origin] = now + Self.unresolvedLifetime
            }
            return .failure(.unresolved)
        case .failure(let failure): return .failure(failure)
        case .success(let resolved): address = resolved
        }
        // The same address as before: the client and its connections stay.
        if let entry = lend(origin, now: now, fresh: { $0.address == address }) {
            return .success(Lease(entry: entry))
        }
        var override: [String: String] = [:]
        if case .name(let name) = endpoint.host, let text = address.ipAddress { override[name] = text }
        // A new address keeps the origin's standing: a stranger's stalling name does not
        // become good by pointing elsewhere for a moment.
        let wasSlow = entries.withLock { $0[origin]?.slow.load(ordering: .relaxed) ?? false }
        let made = Entry(
            origin: origin,
            client: PushHTTP.client(
                trusting: caFile, dnsOverride: override, connectTimeout: connectTimeout, connectionsPerHost: 4),
            address: address, perOrigin: perOrigin, slow: wasSlow)
        made.use.withLock { $0.users = 1 }
        var closing: [Entry] = []
        entries.withLock { entries in
            if let old = entries[origin] { closing.append(old) }
            entries[origin] = made
            if entries.count > Self.maximumOrigins {
                // The least recently used of those no request uses go first; clients in use
                // stay (their number is bounded by the requests in flight).
                let idle = entries.compactMap { key, entry in
                    entry.use.withLock { $0.users == 0 ? (key, entry, $0.lastUsed) : nil }
                }
                for (key, entry, _) in idle.sorted(by: { $0.2 < $1.2 }).prefix(entries.count - Self.maximumOrigins) {
                    entries[key] = nil
                    closing.append(entry)
                }
            }
            for (key, entry) in entries
            where entry.use.withLock({ $0.users == 0 && now - $0.lastUsed > Self.idleLifetime }) {
                entries[key] = nil
                closing.append(entry)
            }
        }
        for entry in closing { retire(entry) }
        return .success(Lease(entry: made))
    }

    /// Gives a lease back; a retired client closes once its last lease is back.
    func release(_ lease: Lease) {
        let close = lease.entry.use.withLock { use -> Bool in
            use.users -= 1
            use.lastUsed = .now
            return use.retired && use.users == 0
        }
        if close { Self.close(lease.entry) }
    }

    /// Closes every client; none can be lent after.
    func shutdown() async {
        let all = entries.withLock { entries in
            defer { entries.removeAll() }
            return Array(entries.values)
        }
        for entry in all { try? await entry.client.shutdown() }
    }

    private func lend(_ origin: String, now: ContinuousClock.Instant, fresh: (Entry) -> Bool) -> Entry? {
        entries.withLock { entries -> Entry? in
            guard let entry = entries[origin], fresh(entry) else { return nil }
            entry.use.withLock {
                $0.users += 1
                $0.lastUsed = now
            }
            return entry
        }
    }

    private func retire(_ entry: Entry) {
        let close = entry.use.withLock { use -> Bool in
            use.retired = true
            return use.users == 0
        }
        if close { Self.close(entry) }
    }

    private static func close(_ entry: Entry) {
        Task { try? await entry.client.shutdown() }
    }
}
