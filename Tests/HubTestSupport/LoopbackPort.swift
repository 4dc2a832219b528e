import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Whether a loopback port is free: a socket can bind it now (on 127.0.0.1, or on ::1).
public enum LoopbackPort {
    public static func isFree(_ port: Int, ipv6: Bool = false) -> Bool {
        let descriptor = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        func bound<Address>(_ address: Address) -> Bool {
            withUnsafePointer(to: address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<Address>.size)) == 0
                }
            }
        }
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            address.sin6_addr = in6addr_loopback
            return bound(address)
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return bound(address)
    }
}
