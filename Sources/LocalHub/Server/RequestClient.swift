import Foundation
import NIOCore
import NotificationHubs
import Synchronization

/// Who a request comes from, for the limits each client gets: the peer's address, or, when
/// the peer is a proxy the operator trusts (`--trusted-proxy`), the last address in
/// `X-Forwarded-For` that is not one of the trusted proxies. An IPv6 client is its /64 (one
/// subscriber's network hands out many addresses), inside its /56 and /48, which the rates
/// count too (`ClientBuckets`); an IPv4-mapped address is its IPv4.
struct RequestClient: Sendable, Hashable, CustomStringConvertible {
    /// The key limits count under: `203.0.113.7`, `2001:db8:1:2::/64`, `loopback`. Every
    /// address of this machine is one client: any local program may send from any of
    /// 127.0.0.0/8, so counting them apart would give one program sixteen million clients.
    let key: String
    /// The networks around an IPv6 client, narrowest first: its /56 and its /48.
    let networks: [String]
    /// What the client is counted as when the rates' table is full of clients still spending:
    /// its /48 (IPv6) or /24 (IPv4); itself for `loopback` and the like.
    let crowd: String
    /// The request reached this hub through a trusted proxy.
    let proxied: Bool
    /// The peer is this machine (a loopback address) and nothing says a proxy stood between
    /// (no `X-Forwarded-For`, `Forwarded` or `X-Real-IP`): what `/metrics` serves openly.
    let directLoopback: Bool

    var description: String { key }

    init(key: String, networks: [String] = [], crowd: String? = nil, proxied: Bool, directLoopback: Bool) {
        self.key = key
        self.networks = networks
        self.crowd = crowd ?? key
        self.proxied = proxied
        self.directLoopback = directLoopback
    }

    /// The client at `bytes` (an address in canonical form).
    private init(_ bytes: [UInt8], proxied: Bool, directLoopback: Bool) {
        let networks: [String]
        let crowd: String
        if Self.isLoopback(bytes) {
            (networks, crowd) = ([], "loopback")
        } else if bytes.count == 4 {
            (networks, crowd) = ([], bytes[0..<3].map(String.init).joined(separator: ".") + ".0/24")
        } else {
            networks = [Self.prefix(bytes, 56), Self.prefix(bytes, 48)]
            crowd = networks[1]
        }
        self.init(key: Self.key(bytes), networks: networks, crowd: crowd, proxied: proxied, directLoopback: directLoopback)
    }

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
            return RequestClient(peerBytes, proxied: false, directLoopback: direct)
        }
        // From the nearest hop back: the first that is not a trusted proxy is the client.
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        guard !hops.isEmpty else {
            return RequestClient(peerBytes, proxied: false, directLoopback: direct)
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
        return RequestClient(client, proxied: true, directLoopback: false)
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
        return prefix(bytes, 64)
    }

    /// An IPv6 network of whole bytes written as `2001:db8:1::/48`.
    private static func prefix(_ bytes: [UInt8], _ bits: Int) -> String {
        PushEndpoint.ipv6Text(Array(bytes[0..<(bits / 8)]) + Array(repeating: 0, count: 16 - bits / 8)) + "/\(bits)"
    }

    /// 127.0.0.0/8 or ::1, in canonical form.
    private static func isLoopback(_ bytes: [UInt8]) -> Bool {
        if bytes.count == 4 { return bytes[0] == 127 }
        return bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
    }
}
