import Foundation
import NIOCore
import NotificationHubs
import Synchronization

/// Who a request comes from, for the limits each client gets: the peer's address, or, when
/// the peer is a proxy the operator trusts (`--trusted-proxy`), the last address in
/// `X-Forwarded-For` that is not one of the trusted proxies. An IPv6 client is its /64 (one
/// subscriber's network hands out many addresses); an IPv4-mapped address is its IPv4.
struct RequestClient: Sendable, Hashable, CustomStringConvertible {
    /// The key limits count under: `203.0.113.7`, `2001:db8:1:2::/64`, `loopback`. Every
    /// address of this machine is one client: any local program may send from any of
    /// 127.0.0.0/8, so counting them apart would give one program sixteen million clients.
    let key: String
    /// The request reached this hub through a trusted proxy.
    let proxied: Bool
    /// The peer is this machine (a loopback address) and nothing says a proxy stood between
    /// (no `X-Forwarded-For`, `Forwarded` or `X-Real-IP`): what `/metrics` serves openly.
    let directLoopback: Bool

    var description: String { key }

    static let unknown = RequestClient(key: "unknown", proxied: false, directLoopback: false)

    /// `peer`: the connection's remote address; `forwardedFor`: every `X-Forwarded-For`
    /// value, in order; `forwarded`: whether the request carries any forwarding header.
    static func of(peer: SocketAddress?, forwardedFor: [String], forwarded: Bool = false, trusted: TrustedProxies)
        -> RequestClient
    {
        // No address: a request handed to the router inside this process (tests).
        guard let peerBytes = peer.flatMap(addressBytes).map(IPAddress.canonical) else {
            return RequestClient(key: "in-process", proxied: false, directLoopback: !forwarded && forwardedFor.isEmpty)
        }
        let direct = isLoopback(peerBytes) && !forwarded && forwardedFor.isEmpty
        guard trusted.contains(peerBytes) else {
            return RequestClient(key: key(peerBytes), proxied: false, directLoopback: direct)
        }
        // From the nearest hop back: the first that is not a trusted proxy is the client.
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        guard !hops.isEmpty else {
            return RequestClient(key: key(peerBytes), proxied: false, directLoopback: direct)
        }
        var client = peerBytes
        for hop in hops.reversed() {
            guard let bytes = parseAddress(hop).map(IPAddress.canonical) else {
                // A hop that is not an address: nothing before it can be believed.
                return RequestClient(key: "forwarded:unreadable", proxied: true, directLoopback: false)
            }
            client = bytes
            if !trusted.contains(bytes) { break }
        }
        return RequestClient(key: key(client), proxied: true, directLoopback: false)
    }

    static func addressBytes(_ address: SocketAddress) -> [UInt8]? {
        switch address {
        case .v4(let v4): return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6): return withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        case .unixDomainSocket: return [127, 0, 0, 1]
        }
    }

    /// An address as `X-Forwarded-For` or `--trusted-proxy` writes it: dotted IPv4 or IPv6
    /// (brackets and a port tolerated).
    static func parseAddress(_ text: String) -> [UInt8]? {
        var text = Substring(text)
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") { text = text[text.index(after: text.startIndex)..<close] }
        // Dotted IPv4, perhaps with a port (`192.0.2.4:5060`); `::ffff:192.0.2.4` is IPv6.
        let pieces = text.split(separator: ":", omittingEmptySubsequences: false)
        if pieces.count <= 2, pieces[0].contains(".") {
            let host = pieces[0]
            let parts = host.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4 else { return nil }
            let bytes = parts.compactMap { part -> UInt8? in
                guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), part.allSatisfy(\.isNumber) else { return nil }
                return UInt8(part)
            }
            return bytes.count == 4 ? bytes : nil
        }
        return PushEndpoint.parseIPv6(ArraySlice(text.utf8))
    }

    private static func key(_ bytes: [UInt8]) -> String {
        if isLoopback(bytes) { return "loopback" }
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        return PushEndpoint.ipv6Text(Array(bytes[0..<8]) + Array(repeating: 0, count: 8)) + "/64"
    }

    /// 127.0.0.0/8 or ::1, in canonical form.
    private static func isLoopback(_ bytes: [UInt8]) -> Bool {
        if bytes.count == 4 { return bytes[0] == 127 }
        return bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
    }
}

/// The proxies whose `X-Forwarded-For` the hub believes: addresses or networks
/// (`127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`).
public struct TrustedProxies: Sendable, Hashable {
    private let networks: [(bytes: [UInt8], bits: Int)]

    public static let none = TrustedProxies(networks: [])

    private init(networks: [(bytes: [UInt8], bits: Int)]) { self.networks = networks }

    /// Reads `--trusted-proxy` values; the first that is not an address or network is named.
    public init(_ values: [String]) throws(LocalHubStartError) {
        var networks: [(bytes: [UInt8], bits: Int)] = []
        for value in values {
            let parts = value.split(separator: "/", maxSplits: 1).map(String.init)
            guard let written = parts.first.flatMap(RequestClient.parseAddress) else {
                throw LocalHubStartError(description: "--trusted-proxy '\(value)' is not an IP address or network")
            }
            let most = written.count * 8
            guard let bits = parts.count == 2 ? Int(parts[1]) : most, (0...most).contains(bits) else {
                throw LocalHubStartError(description: "--trusted-proxy '\(value)' has a prefix length that is not 0 to \(most)")
            }
            // `::ffff:10.0.0.0/104` is 10.0.0.0/8, as the peers it should match are read.
            let bytes = IPAddress.canonical(written)
            let mapped = bytes.count != written.count
            guard !mapped || bits >= 96 else {
                throw LocalHubStartError(description: "--trusted-proxy '\(value)' has a prefix length that is not 96 to 128")
            }
            networks.append((bytes, mapped ? bits - 96 : bits))
        }
        self.networks = networks
    }

    public var isEmpty: Bool { networks.isEmpty }

    func contains(_ address: [UInt8]) -> Bool {
        networks.contains { network in
            guard network.bytes.count == address.count else { return false }
            var left = network.bits
            for (a, b) in zip(network.bytes, address) {
                guard left > 0 else { return true }
                let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
                if a & mask != b & mask { return false }
                left -= 8
            }
            return true
        }
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.networks.map(\.bytes) == b.networks.map(\.bytes) && a.networks.map(\.bits) == b.networks.map(\.bits)
    }

    public func hash(into hasher: inout Hasher) {
        for network in networks {
            hasher.combine(network.bytes)
            hasher.combine(network.bits)
        }
    }
}

/// What one client may do in a while, so that no client exhausts what every client shares
/// (the claim table, a hub's byte budget, the streams). Each rate is a token bucket: full
/// at the start, refilled evenly over the hour; 0 turns a rate off. Counted per node.
public struct ClientRates: Sendable, Hashable {
    /// New devices an hour: claims of a token not claimed before, installations and legacy
    /// registrations that did not exist. Also the most at once.
    public var newDevicesPerHour: Int
    /// Bytes of installation and registration bodies written an hour; also the most at once.
    public var bytesPerHour: Int
    /// Device streams open at once.
    public var streams: Int
    /// Connections open at once (`ClientConnections`).
    public var connections: Int

    public init(newDevicesPerHour: Int = 600, bytesPerHour: Int = 16 << 20, streams: Int = 256, connections: Int = 512) {
        self.newDevicesPerHour = newDevicesPerHour
        self.bytesPerHour = bytesPerHour
        self.streams = streams
        self.connections = connections
    }

    /// No limit at all (tests and benchmarks that play thousands of clients from one address).
    public static let unlimited = ClientRates(newDevicesPerHour: 0, bytesPerHour: 0, streams: 0, connections: 0)
}

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

/// The connections each client holds open, so that no client takes every connection the hub
/// may have (`--max-connections`) and leaves none for the others. A trusted proxy carries
/// many clients and is not counted (its clients are, by the limits above).
final class ClientConnections: Sendable {
    let limit: Int
    let trusted: TrustedProxies
    private let open = Mutex<[String: Int]>([:])

    /// `limit` connections per client; 0: no limit.
    init(limit: Int, trusted: TrustedProxies) {
        self.limit = limit
        self.trusted = trusted
    }

    /// Counts a new connection from `peer`; the client it counts under, or nil when the
    /// client holds its limit already (close the connection) or nothing is counted.
    func opened(peer: SocketAddress?) -> Admission {
        guard limit > 0, let bytes = peer.flatMap(RequestClient.addressBytes).map(IPAddress.canonical),
            !trusted.contains(bytes)
        else { return .uncounted }
        let key = RequestClient.of(peer: peer, forwardedFor: [], trusted: .none).key
        return open.withLock { open in
            let count = open[key, default: 0]
            guard count < limit else { return .refused(key) }
            open[key] = count + 1
            return .counted(key)
        }
    }

    /// A counted connection closed.
    func closed(_ key: String) {
        open.withLock { open in
            let left = open[key, default: 1] - 1
            open[key] = left > 0 ? left : nil
        }
    }

    /// Clients holding connections now.
    var clients: Int { open.withLock { $0.count } }

    enum Admission: Equatable {
        case uncounted
        case counted(String)
        case refused(String)
    }
}

/// Closes a connection at once when its client holds its limit (`ClientConnections`), and
/// counts it off when it closes.
final class ClientConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let connections: ClientConnections
    private var counted: String?
    private var admitted = false

    init(_ connections: ClientConnections) { self.connections = connections }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let counted {
            connections.closed(counted)
            self.counted = nil
        }
        context.fireChannelInactive()
    }

    private func admit(context: ChannelHandlerContext) {
        guard !admitted else { return }
        admitted = true
        switch connections.opened(peer: context.channel.remoteAddress) {
        case .uncounted: break
        case .counted(let key): counted = key
        case .refused: context.close(promise: nil)
        }
    }
}
