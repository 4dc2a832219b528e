import Foundation
import NIOCore
import NotificationHubs
import Synchronization

/// The token buckets of every client, for one rate.
final class ClientBuckets: Sendable {
    /// Clients remembered at once; past it, those whose bucket is full again (idle) are
    /// forgotten, then the longest unseen.
    static let maximumClients = 65_536

    private let capacity: Double
    private let perSecond: Double
    private let buckets = Mutex<[String: (tokens: Double, at: ContinuousClock.Instant)]>([:])

    /// `perHour` tokens an hour, at most that many at once; 0: unlimited.
    init(perHour: Int) {
        capacity = Double(perHour)
        perSecond = Double(perHour) / 3600
    }

    /// Takes `amount` from `client`'s bucket; nil when it could, else how many seconds until
    /// it can. An amount larger than the bucket is taken from a full one (the budget goes
    /// negative and fills back).
    func take(_ amount: Int, client: String, now: ContinuousClock.Instant = .now) -> Double? {
        guard capacity > 0, amount > 0 else { return nil }
        return buckets.withLock { buckets -> Double? in
            var entry = buckets[client] ?? (capacity, now)
            let elapsed = Double((now - entry.at).components.seconds) + Double((now - entry.at).components.attoseconds) / 1e18
            entry.tokens = min(capacity, entry.tokens + max(0, elapsed) * perSecond)
            entry.at = now
            let wanted = min(Double(amount), capacity)
            guard entry.tokens >= wanted else {
                buckets[client] = entry
                return ((wanted - entry.tokens) / perSecond).rounded(.up)
            }
            entry.tokens -= Double(amount)
            if buckets[client] == nil, buckets.count >= Self.maximumClients { forget(&buckets, now: now) }
            buckets[client] = entry
            return nil
        }
    }

    /// Clients remembered now.
    var count: Int { buckets.withLock { $0.count } }

    private func forget(_ buckets: inout [String: (tokens: Double, at: ContinuousClock.Instant)], now: ContinuousClock.Instant) {
        buckets = buckets.filter { _, entry in
            let elapsed = Double((now - entry.at).components.seconds)
            return entry.tokens + elapsed * perSecond < capacity
        }
        // Still full of clients that are spending: the least recently seen go, down to three
        // quarters (each forgotten client starts again with a full bucket, so as few as will
        // make room for a while).
        if buckets.count >= Self.maximumClients {
            let excess = buckets.count - Self.maximumClients * 3 / 4
            let oldest = buckets.sorted { $0.value.at < $1.value.at }.prefix(excess).map(\.key)
            for key in oldest { buckets[key] = nil }
        }
    }
}
