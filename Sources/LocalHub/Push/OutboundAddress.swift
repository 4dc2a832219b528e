import Foundation
import NIOCore
import NIOPosix
import NotificationHubs
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Where a request to an endpoint that someone else supplied (a browser's push
/// subscription) may go: the endpoint's host resolved here, once, and every address it
/// gave checked, so that the request connects to exactly the address that was checked.
/// Addresses of this machine and of private networks are refused, however they are spelled
/// or resolved, unless the operator allowed them (a push service of their own).
enum OutboundAddress {
    /// Why an address may not be connected to.
    enum Kind: String, Sendable {
        case loopback, privateNetwork, linkLocal, uniqueLocal, unspecified, multicast, broadcast, reserved
        case documentation, sharedAddressSpace, mappedIPv4, translatedIPv4, tunnelled, siteLocal
        /// An address of one of this machine's interfaces (its public address too): a request
        /// there reaches whatever listens on all addresses here.
        case thisMachine
    }

    /// The kind of address `bytes` is (4 or 16 bytes) when it is not a public unicast
    /// address; nil when it is one.
    static func restriction(_ bytes: [UInt8]) -> Kind? {
        if bytes.count == 4 { return restriction(ipv4: bytes) }
        guard bytes.count == 16 else { return .reserved }
        let zeros = { (range: Range<Int>) in bytes[range].allSatisfy { $0 == 0 } }
        if zeros(0..<16) { return .unspecified }
        if zeros(0..<15), bytes[15] == 1 { return .loopback }
        // ::ffff:a.b.c.d (mapped) and 64:ff9b::a.b.c.d (NAT64's well-known prefix) reach the
        // IPv4 address they carry, and are what it is (a resolver on an IPv6-only network
        // gives the NAT64 form of every public address).
        if zeros(0..<10), bytes[10] == 0xFF, bytes[11] == 0xFF { return restriction(ipv4: Array(bytes[12...])) }
        if bytes[0..<4] == [0x00, 0x64, 0xFF, 0x9B], zeros(4..<12) { return restriction(ipv4: Array(bytes[12...])) }
        // ::a.b.c.d (deprecated), ::ffff:0:a.b.c.d (SIIT) and 64:ff9b:1::/48 (NAT64 for local
        // use) are refused whatever they carry.
        if zeros(0..<12) { return .mappedIPv4 }
        if zeros(0..<8), bytes[8] == 0xFF, bytes[9] == 0xFF, zeros(10..<12) { return .translatedIPv4 }
        if bytes[0] == 0x00, bytes[1] == 0x64, bytes[2] == 0xFF, bytes[3] == 0x9B { return .translatedIPv4 }
        if bytes[0] == 0x01, zeros(1..<8) { return .reserved }  // 100::/64, discard
        if bytes[0] == 0xFF { return .multicast }
        if bytes[0] == 0xFE, bytes[1] & 0xC0 == 0x80 { return .linkLocal }
        if bytes[0] == 0xFE, bytes[1] & 0xC0 == 0xC0 { return .siteLocal }
        if bytes[0] & 0xFE == 0xFC { return .uniqueLocal }
        if bytes[0] == 0x20, bytes[1] == 0x01, bytes[2] == 0x0D, bytes[3] == 0xB8 { return .documentation }
        if bytes[0] == 0x20, bytes[1] == 0x01, bytes[2] == 0x00, bytes[3] == 0x00 { return .tunnelled }  // Teredo
        if bytes[0] == 0x20, bytes[1] == 0x02 { return .tunnelled }  // 6to4
        if bytes[0] == 0x20, bytes[1] == 0x01, bytes[2] < 0x02 { return .reserved }  // 2001::/23 IETF
        // Only global unicast (2000::/3) is the public Internet.
        if bytes[0] & 0xE0 != 0x20 { return .reserved }
        return nil
    }

    private static func restriction(ipv4 b: [UInt8]) -> Kind? {
        switch (b[0], b[1], b[2]) {
        case (0, _, _): return .unspecified
        case (10, _, _), (172, 16...31, _), (192, 168, _): return .privateNetwork
        case (100, 64...127, _): return .sharedAddressSpace
        case (127, _, _): return .loopback
        case (169, 254, _): return .linkLocal
        case (192, 0, 0), (192, 0, 2), (198, 51, 100), (203, 0, 113): return .documentation
        case (192, 88, 99), (198, 18...19, _): return .reserved
        case (224...239, _, _): return .multicast
        case (255, 255, 255) where b[3] == 255: return .broadcast
        case (240...255, _, _): return .reserved
        default: return nil
        }
    }

    /// Why an endpoint's host gives no address a request may go to.
    enum Failure: Error, Sendable, Equatable {
        /// The name does not resolve (now).
        case unresolved
        /// It resolves (or is) an address of a kind that is refused.
        case restricted(Kind)
    }

    /// The address to connect to for `endpoint`: its literal address, or the first address
    /// its name resolves to, after every address the name gave was checked (a name with one
    /// private address among public ones is refused: the resolver may hand out either).
    static func resolve(
        _ endpoint: PushEndpoint, allowPrivate: Bool,
        ownAddresses: @Sendable () -> Set<[UInt8]> = {
            LocalInterfaces.shared.addresses()
        }
    ) async -> Result<SocketAddress, Failure> {
        let candidates: [[UInt8]]
        switch endpoint.host {
        case .ipv4(let bytes), .ipv6(let bytes):
            candidates = [bytes]
        case .name(let name):
            let resolved = await lookUp(name)
            guard !resolved.isEmpty else { return .failure(.unresolved) }
            candidates = resolved
        }
        if !allowPrivate {
            if let kind = candidates.lazy.compactMap({ Self.restriction($0) }).first { return .failure(.restricted(kind)) }
            let own = ownAddresses()
            if candidates.contains(where: { own.contains(IPAddress.canonical($0)) }) {
                return .failure(.restricted(.thisMachine))
            }
        }
        guard let address = socketAddress(candidates[0], port: endpoint.port) else { return .failure(.unresolved) }
        return .success(address)
    }

    /// A socket address for 4 or 16 address bytes.
    static func socketAddress(_ bytes: [UInt8], port: Int) -> SocketAddress? {
        let text = bytes.count == 4 ? bytes.map(String.init).joined(separator: ".") : PushEndpoint.ipv6Text(bytes)
        return try? SocketAddress(ipAddress: text, port: port)
    }

    /// The address text a connection is made to (no brackets).
    static func text(_ address: SocketAddress) -> String? { address.ipAddress }

    /// Threads of their own for lookups, so that names a stranger made slow to resolve hold
    /// up only other lookups, never the hub's file work on NIO's shared pool.
    private static let lookups: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 4)
        pool.start()
        return pool
    }()

    /// How long a lookup is waited for; one that takes longer counts as not resolving (its
    /// thread finishes it in the background).
    static let lookupDeadline: Duration = .seconds(5)

    /// Every address `name` resolves to (IPv4 and IPv6, TCP), in the resolver's order; empty
    /// when it does not resolve within `lookupDeadline`.
    static func lookUp(
        _ name: String, deadline: Duration = lookupDeadline,
        resolver: @escaping @Sendable (String) -> [[UInt8]] = getAddresses
    ) async -> [[UInt8]] {
        let answer = Answer()
        return await withCheckedContinuation { continuation in
            answer.wait(continuation)
            lookups.submit { state in answer.give(state == .active ? resolver(name) : []) }
            Task {
                try? await Task.sleep(for: deadline)
                answer.give([])
            }
        }
    }

    /// A lookup's answer, given once: by the resolver or by the deadline, whichever is first.
    private final class Answer: Sendable {
        private let waiting = Mutex<CheckedContinuation<[[UInt8]], Never>?>(nil)

        func wait(_ continuation: CheckedContinuation<[[UInt8]], Never>) { waiting.withLock { $0 = continuation } }

        func give(_ addresses: [[UInt8]]) { waiting.withLock { $0.take() }?.resume(returning: addresses) }
    }

    static func getAddresses(_ name: String) -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var result: [[UInt8]] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let address = current.pointee.ai_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        let raw = v4.pointee.sin_addr.s_addr  // network order in memory
                        result.append(withUnsafeBytes(of: raw) { Array($0) })
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        result.append(withUnsafeBytes(of: v6.pointee.sin6_addr) { Array($0) })
                    }
                default:
                    break
                }
            }
            entry = current.pointee.ai_next
        }
        // One entry per address (the resolver lists one per socket type otherwise).
        var seen = Set<[UInt8]>()
        return result.filter { seen.insert($0).inserted }
    }
}
