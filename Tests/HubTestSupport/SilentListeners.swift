import Foundation
import TestTiers

#if canImport(Glibc)
    import Glibc
#endif

/// Ports on 127.0.0.1 that take connections and never answer: the kernel completes each
/// connection into the listen queue and nothing ever reads it, so a TLS handshake or a
/// request to one waits until the client gives up. Closed when `body` ends.
public enum SilentListeners {
    public static func with<T>(count: Int, _ body: ([Int]) async throws -> T) async throws -> T {
        try TestTier.requireFullSuite("listening sockets")
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        var ports: [Int] = []
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw TestHubError(description: "socket() failed") }
            sockets.append(fd)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    bind(fd, pointer, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, pointer, &length) == 0
                }
            }
            guard bound else { throw TestHubError(description: "cannot listen on 127.0.0.1") }
            ports.append(Int(UInt16(bigEndian: address.sin_port)))
        }
        return try await body(ports)
    }
}
