import Foundation
import NIOCore
import Testing

@testable import LocalHub

/// The per-client rates (issue 49): a bucket refills over the hour, the networks around an
/// IPv6 client hold 4 and 16 times its budget, and a client still spending is never forgotten.
@Suite struct ClientBucketTests {
    static func client(_ address: String) -> RequestClient {
        RequestClient.of(peer: try! SocketAddress(ipAddress: address, port: 5), forwardedFor: [], trusted: .none)
    }

    /// Each of `clients` takes `each` tokens; how many takes succeeded.
    static func spend(_ buckets: ClientBuckets, _ clients: [RequestClient], each: Int, at now: ContinuousClock.Instant) -> Int {
        clients.reduce(0) { taken, client in taken + (buckets.take(each, client: client, now: now) == nil ? 1 : 0) }
    }

    @Test func aBucketRefillsOverTheHour() {
        let buckets = ClientBuckets(perHour: 3600)
        let start = ContinuousClock.now
        let a = Self.client("192.0.2.1")
        #expect(buckets.take(3600, client: a, now: start) == nil)
        #expect(buckets.take(1, client: a, now: start) == ClientBuckets.Refusal(key: "192.0.2.1", seconds: 1))
        #expect(buckets.take(1, client: a, now: start + .seconds(1)) == nil, "one a second")
        #expect(buckets.take(1, client: Self.client("192.0.2.2"), now: start) == nil, "each client its own")
        #expect(ClientBuckets(perHour: 0).take(1_000_000, client: a) == nil, "0 is no limit")
    }

    @Test func anIPv6ClientIsItsSlash64InsideItsSlash56AndSlash48() {
        let client = Self.client("2001:db8:1:2ff:3:4:5:6")
        #expect(client.key == "2001:db8:1:2ff::/64")
        #expect(client.networks == ["2001:db8:1:200::/56", "2001:db8:1::/48"])
        #expect(client.crowd == "2001:db8:1::/48")
        #expect(Self.client("198.51.100.7").crowd == "198.51.100.0/24")
        #expect(Self.client("::1").networks.isEmpty && Self.client("::1").crowd == "loopback")
    }

    /// Distinct /64s of one /56 share 4 budgets, of one /48 16: once spent, a /64 never seen
    /// before is refused, and the refusal names the network.
    @Test func aNetworkOfDistinctSlash64sCannotExceedItsShare() {
        let buckets = ClientBuckets(perHour: 10)
        let now = ContinuousClock.now
        let oneSlash56 = (0..<6).map { Self.client("2001:db8:1:20\($0)::1") }
        #expect(Self.spend(buckets, oneSlash56, each: 10, at: now) == 4)
        #expect(buckets.take(1, client: Self.client("2001:db8:1:2aa::9"), now: now)?.key == "2001:db8:1:200::/56")
        // 256 /56s of one /48, two /64s each: 16 budgets in all (4 of them spent above).
        let oneSlash48 = (0..<512).map { Self.client(String(format: "2001:db8:1:%02x%02x::1", $0 / 2, $0 % 2)) }
        #expect(Self.spend(buckets, oneSlash48, each: 10, at: now) == 12)
        #expect(buckets.take(1, client: Self.client("2001:db8:1:ff55::1"), now: now)?.key == "2001:db8:1::/48")
        // Another /48 has its own.
        #expect(buckets.take(10, client: Self.client("2001:db8:2::1"), now: now) == nil)
        // The network fills back over the hour like any bucket: after six minutes, one /64's worth.
        #expect(buckets.take(10, client: Self.client("2001:db8:1:ff66::1"), now: now + .seconds(360)) == nil)
        #expect(buckets.take(10, client: Self.client("2001:db8:1:ff77::1"), now: now + .seconds(360)) != nil)
    }

    /// On `main` a table full of clients still spending forgot the oldest and gave them fresh
    /// budgets. Now a spender is never forgotten: new clients past a full table are counted at
    /// their /24 (or /48), and only buckets full again make room.
    @Test func aSpenderIsNeverForgotten() {
        let buckets = ClientBuckets(perHour: 10)
        let start = ContinuousClock.now
        let spenders = (0..<ClientBuckets.maximumClients).map { Self.client("10.\($0 >> 16).\(($0 >> 8) & 255).\($0 & 255)") }
        #expect(Self.spend(buckets, spenders, each: 10, at: start) == spenders.count)
        #expect(buckets.take(1, client: spenders[0], now: start + .seconds(2))?.key == spenders[0].key, "not forgotten")
        // The table is full of spenders: newcomers share their /24's 16 budgets.
        let newcomers = (0..<20).map { Self.client("172.16.9.\($0)") }
        #expect(Self.spend(buckets, newcomers, each: 10, at: start + .seconds(2)) == 16)
        #expect(buckets.take(1, client: Self.client("172.16.9.99"), now: start + .seconds(2))?.key == "172.16.9.0/24")
        #expect(buckets.take(10, client: Self.client("172.16.10.1"), now: start + .seconds(2)) == nil, "another /24")
        // An hour on, every bucket is full again: forgotten, so a newcomer has its own bucket.
        let later = start + .seconds(3602)
        let fresh = Self.client("172.16.9.200")
        #expect(buckets.take(10, client: fresh, now: later) == nil)
        #expect(buckets.take(10, client: fresh, now: later)?.key == fresh.key)
        #expect(buckets.count <= ClientBuckets.maximumClients + ClientBuckets.maximumNetworks + 1)
    }

    /// However many clients spend, the tables stay bounded.
    @Test func theTablesStayBounded() {
        let buckets = ClientBuckets(perHour: 10)
        let start = ContinuousClock.now
        var most = 0
        for i in 0..<(ClientBuckets.maximumClients + 5000) {
            // Each its own /48, so every client brings two networks as well.
            let client = Self.client(String(format: "2001:%x:%x::1", (i >> 16) + 1, i & 0xffff))
            _ = buckets.take(10, client: client, now: start + .milliseconds(i))
            most = max(most, buckets.count)
        }
        #expect(most <= ClientBuckets.maximumClients + ClientBuckets.maximumNetworks + 1)
    }
}
