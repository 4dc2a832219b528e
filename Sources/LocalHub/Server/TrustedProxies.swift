import Foundation
import NIOCore
import NotificationHubs
import Synchronization

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
