import Foundation
import NIOCore
import NotificationHubs
import Synchronization

/// The token buckets of every client, for one rate. A take counts against the client's own
/// bucket and each network around it (`RequestClient.networks`: an IPv6 /56 holds 4 and a /48
/// 16 times a client's budget, shared by every /64 inside), so many addresses of one network
/// spend no more than the network may.
///
/// The table is bounded. Only buckets that are full again are ever forgotten (forgetting one
/// changes nothing: it would start full); a client still spending is never given a fresh
/// budget. When the table is full of clients still spending, a new client is counted only at
/// its crowd (`RequestClient.crowd`: its /48 or /24), and when even the networks' table is
/// full, in one bucket shared by all such clients.
final class ClientBuckets: Sendable {
    /// Clients remembered at once.
    static let maximumClients = 65_536
    /// Networks remembered at once: each IPv6 client's /56 and /48, and crowds.
    static let maximumNetworks = 2 * maximumClients
    /// How many budgets of a client each of its networks holds, narrowest first.
    static let networkShares: [Double] = [4, 16]
    /// The share of a crowd, and of the bucket of every client past both tables.
    static let crowdShare: Double = 16
    /// Where clients past both tables are counted.
    static let overflowKey = "clients the hub has no room to count apart"
    /// The least time between two sweeps of a full table (a sweep reads the whole table).
    static let sweepInterval: Duration = .seconds(1)

    /// What a take was refused for: the bucket that is short, and the seconds until it is not.
    struct Refusal: Equatable {
        var key: String
        var seconds: Double
    }

    private struct Bucket {
        var tokens: Double
        var at: ContinuousClock.Instant
        let share: Double
    }

    private struct Table {
        var entries: [String: Bucket] = [:]
        var swept: ContinuousClock.Instant?
        let maximum: Int
    }

    private let capacity: Double
    private let perSecond: Double
    private let tables = Mutex<(clients: Table, networks: Table)>(
        (Table(maximum: ClientBuckets.maximumClients), Table(maximum: ClientBuckets.maximumNetworks)))

    /// `perHour` tokens an hour, at most that many at once; 0: unlimited.
    init(perHour: Int) {
        capacity = Double(perHour)
        perSecond = Double(perHour) / 3600
    }

    /// Takes `amount` from `client`'s bucket and its networks'; nil when it could, else the
    /// bucket that is short and how many seconds until it is not. An amount larger than a
    /// bucket is taken from a full one (the budget goes negative and fills back).
    func take(_ amount: Int, client: RequestClient, now: ContinuousClock.Instant = .now) -> Refusal? {
        guard capacity > 0, amount > 0 else { return nil }
        return tables.withLock { tables -> Refusal? in
            // The buckets this take counts against: in the clients' table (0) or the networks' (1).
            var counted: [(table: Int, key: String, share: Double)] = []
            let crowded = !hasRoom(&tables.clients, for: client.key, now: now)
            if !crowded { counted.append((0, client.key, 1)) }
            var networks = Array(zip(client.networks, Self.networkShares))
            if crowded, !client.networks.contains(client.crowd) { networks.append((client.crowd, Self.crowdShare)) }
            for (network, share) in networks {
                if hasRoom(&tables.networks, for: network, now: now) {
                    counted.append((1, network, share))
                } else if !counted.contains(where: { $0.key == Self.overflowKey }) {
                    counted.append((1, Self.overflowKey, Self.crowdShare))
                }
            }
            if counted.isEmpty { counted.append((1, Self.overflowKey, Self.crowdShare)) }
            // Every bucket refilled to now; the take happens only if each of them can give.
            var refilled: [Bucket] = []
            var refusal: Refusal?
            for place in counted {
                let stored = place.table == 0 ? tables.clients.entries[place.key] : tables.networks.entries[place.key]
                var bucket = stored ?? Bucket(tokens: capacity * place.share, at: now, share: place.share)
                bucket.tokens = min(capacity * bucket.share, bucket.tokens + seconds(now - bucket.at) * perSecond * bucket.share)
                bucket.at = now
                refilled.append(bucket)
                let wanted = min(Double(amount), capacity * bucket.share)
                if bucket.tokens < wanted {
                    let wait = ((wanted - bucket.tokens) / (perSecond * bucket.share)).rounded(.up)
                    if wait > refusal?.seconds ?? -1 { refusal = Refusal(key: place.key, seconds: wait) }
                }
            }
            for (place, var bucket) in zip(counted, refilled) {
                if refusal == nil {
                    bucket.tokens -= Double(amount)
                } else if bucket.tokens >= capacity * bucket.share {
                    continue  // refused, and full: nothing to remember
                }
                if place.table == 0 {
                    tables.clients.entries[place.key] = bucket
                } else {
                    tables.networks.entries[place.key] = bucket
                }
            }
            return refusal
        }
    }

    /// Clients and networks remembered now.
    var count: Int { tables.withLock { $0.clients.entries.count + $0.networks.entries.count } }

    private func seconds(_ duration: Duration) -> Double {
        max(0, Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    /// Whether `key` has a bucket in `table` or room for one; a full table is swept of the
    /// buckets full again, at most once a `sweepInterval`.
    private func hasRoom(_ table: inout Table, for key: String, now: ContinuousClock.Instant) -> Bool {
        if table.entries[key] != nil || table.entries.count < table.maximum { return true }
        if let swept = table.swept, now - swept < Self.sweepInterval { return false }
        table.swept = now
        table.entries = table.entries.filter { _, bucket in
            bucket.tokens + seconds(now - bucket.at) * perSecond * bucket.share < capacity * bucket.share
        }
        return table.entries.count < table.maximum
    }
}
