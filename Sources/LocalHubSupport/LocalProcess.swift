import Foundation

/// Facts about processes of this machine, read from the kernel: whether one is alive and
/// which listening TCP ports it holds.
public enum LocalProcess {
    /// Whether `pid` names a live process this user may signal.
    public static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        return kill(pid, 0) == 0
    }

    /// Whether `pid` holds the socket listening on TCP `port` (IPv4 or IPv6); `nil` when the
    /// kernel's tables cannot be read here, so the caller relies on its other checks.
    public static func listens(_ pid: Int32, port: Int) -> Bool? {
        var inodes = Set<String>()
        var readable = false
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            readable = true
            inodes.formUnion(listeningInodes(in: text, port: port))
        }
        guard readable else { return nil }
        guard !inodes.isEmpty else { return false }
        let fdFolder = "/proc/\(pid)/fd"
        guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: fdFolder) else { return false }
        for descriptor in descriptors {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fdFolder)/\(descriptor)"),
                target.hasPrefix("socket:[")
            else { continue }
            if inodes.contains(String(target.dropFirst(8).dropLast())) { return true }
        }
        return false
    }

    /// The inodes of sockets listening on `port` in one of the kernel's `/proc/net/tcp` tables.
    static func listeningInodes(in table: String, port: Int) -> [String] {
        let wanted = String(port, radix: 16, uppercase: true)
        var inodes: [String] = []
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
            guard fields.count > 9, fields[3] == "0A", let colon = fields[1].lastIndex(of: ":") else { continue }
            let localPort = fields[1][fields[1].index(after: colon)...]
            if localPort.drop(while: { $0 == "0" }) == wanted[...] { inodes.append(String(fields[9])) }
        }
        return inodes
    }
}
