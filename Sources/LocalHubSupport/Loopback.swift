import Foundation

/// Plain TCP on the loopback interface, for the tools beside the hub (tests, bench) that
/// check a port or speak below HTTP.
public enum Loopback {
    /// A socket connected to `127.0.0.1:port`, or the errno that refused it.
    public static func connect(port: Int) -> Result<Int32, LoopbackError> {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return .failure(LoopbackError(operation: "socket", code: errno)) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(descriptor)
            return .failure(LoopbackError(operation: "connect to \(port)", code: code))
        }
        return .success(descriptor)
    }

    /// Whether something accepts connections on `127.0.0.1:port`, trying for up to `limit`.
    public static func waitForListener(port: Int, within limit: Duration) -> Bool {
        let deadline = ContinuousClock.now + limit
        repeat {
            if case .success(let descriptor) = connect(port: port) {
                close(descriptor)
                return true
            }
            usleep(20_000)
        } while ContinuousClock.now < deadline
        return false
    }
}

/// A loopback socket call that failed, with the system's reason.
public struct LoopbackError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let code: Int32

    public var description: String { "\(operation): \(String(cString: strerror(code)))" }
}
