import Foundation

/// Who listens on a TCP port of this machine, as far as this user can see: the process and
/// its name, read from the kernel (`/proc/net/tcp`, `/proc/PID/fd`), and, when it is a local
/// hub, the data folder whose lock it holds.
public struct PortHolder: Sendable, Equatable, CustomStringConvertible {
    public let port: Int
    /// Nil when the socket belongs to a process this user cannot look into (another user's).
    public let pid: Int32?
    /// The process's name (`/proc/PID/comm`).
    public let name: String?
    /// The data folder of the local hub that holds the port, when a hub does: the folder of
    /// the `hub.lock` it keeps open while it runs.
    public let hubDirectory: URL?

    public init(port: Int, pid: Int32?, name: String?, hubDirectory: URL?) {
        self.port = port
        self.pid = pid
        self.name = name
        self.hubDirectory = hubDirectory
    }

    /// The holder of the socket listening on `port`; nil when nothing listens there.
    public static func find(port: Int) -> PortHolder? {
        guard port > 0 else { return nil }
        var inodes = Set<String>()
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = LocalProcess.readWhole(table) else { continue }
            inodes.formUnion(LocalProcess.listeningInodes(in: text, port: port))
        }
        guard !inodes.isEmpty else { return nil }
        let sockets = Set(inodes.map { "socket:[\($0)]" })
        for pid in processIDs() {
            let targets = descriptorTargets(of: pid)
            guard targets.contains(where: sockets.contains) else { continue }
            let lock = targets.first { $0.hasSuffix("/" + LocalHubDefaults.lockFileName) }
            return PortHolder(
                port: port, pid: pid,
                name: LocalProcess.readWhole("/proc/\(pid)/comm").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) },
                hubDirectory: lock.map { URL(fileURLWithPath: $0).deletingLastPathComponent() })
        }
        return PortHolder(port: port, pid: nil, name: nil, hubDirectory: nil)
    }

    /// Whether the port is held by the hub of `directory` (symbolic links resolved).
    public func isHub(of directory: URL) -> Bool {
        guard let hubDirectory else { return false }
        return hubDirectory.resolvingSymlinksInPath().standardizedFileURL.path
            == directory.resolvingSymlinksInPath().standardizedFileURL.path
    }

    /// "port 47474 is held by …", with where that hub answers when it is one.
    public var description: String {
        guard let pid else { return "port \(port) is held by a process of another user" }
        guard let hubDirectory else {
            return "port \(port) is held by \(name ?? "a program") (pid \(pid)), which is not a local hub"
        }
        let url = LocalHubState.read(hubDirectory.appendingPathComponent(LocalHubState.fileName)).map { " at \($0.url)" } ?? ""
        return "port \(port) is held by the local hub of another data folder (pid \(pid)\(url), data folder \(hubDirectory.path))"
    }

    /// The pids of /proc, lowest first.
    static func processIDs() -> [Int32] {
        entries(of: "/proc").compactMap { Int32($0) }.sorted()
    }

    /// Where each open descriptor of `pid` points (`socket:[…]`, a path); empty when this
    /// user may not look (another user's process) or the process is gone.
    static func descriptorTargets(of pid: Int32) -> [String] {
        let folder = "/proc/\(pid)/fd"
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        return entries(of: folder).compactMap { name in
            guard name.first?.isNumber == true else { return nil }
            let count = readlink("\(folder)/\(name)", &buffer, buffer.count - 1)
            guard count > 0 else { return nil }
            return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// The names in a folder, with readdir: entries of /proc come and go while it is read,
    /// and one that vanished must not fail the whole read.
    static func entries(of path: String) -> [String] {
        guard let folder = opendir(path) else { return [] }
        defer { closedir(folder) }
        var names: [String] = []
        while let entry = readdir(folder) { names.append(LocalProcess.entryName(entry)) }
        return names
    }
}
