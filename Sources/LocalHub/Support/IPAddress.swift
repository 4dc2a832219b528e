import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// IP addresses as their bytes: 4 for IPv4, 16 for IPv6.
enum IPAddress {
    /// An IPv4 address however it came (a dual-stack socket gives `::ffff:a.b.c.d`) as its
    /// four bytes; any other address as it is.
    static func canonical(_ bytes: [UInt8]) -> [UInt8] {
        if bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return Array(bytes[12...])
        }
        return bytes
    }
}

/// The addresses of this machine's interfaces, in canonical form (`IPAddress`), read again
/// when older than `lifetime` (an address may come with DHCP or a VPN at any time).
final class LocalInterfaces: Sendable {
    static let shared = LocalInterfaces()
    static let lifetime: Duration = .seconds(30)

    private let cache = Mutex<(addresses: Set<[UInt8]>, read: ContinuousClock.Instant?)>(([], nil))

    func addresses(now: ContinuousClock.Instant = .now) -> Set<[UInt8]> {
        if let fresh = cache.withLock({ cache in cache.read.map { now - $0 < Self.lifetime } == true ? cache.addresses : nil }) {
            return fresh
        }
        let read = Self.read()
        cache.withLock { $0 = (read, now) }
        return read
    }

    private static func read() -> Set<[UInt8]> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(first) }
        var addresses = Set<[UInt8]>()
        var entry: UnsafeMutablePointer<ifaddrs>? = first
        while let current = entry {
            if let address = current.pointee.ifa_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        addresses.insert(withUnsafeBytes(of: v4.pointee.sin_addr.s_addr) { Array($0) })
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        addresses.insert(IPAddress.canonical(withUnsafeBytes(of: v6.pointee.sin6_addr) { Array($0) }))
                    }
                default:
                    break
                }
            }
            entry = current.pointee.ifa_next
        }
        return addresses
    }
}
