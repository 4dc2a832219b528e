import Foundation

/// Facts about processes of this machine, read from the kernel: whether one is alive and
/// which listening TCP ports it holds.
public enum LocalProcess {
    /// Whether `pid` names a live process this user may signal; a zombie (exited, not yet reaped by its
    /// parent) is not one: it holds no socket and answers nothing.
    public static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0, kill(pid, 0) == 0 else { return false }
        guard let stat = readWhole("/proc/\(pid)/stat"),
            let close = stat.lastIndex(of: ")")
        else { return true }
        // After "pid (comm) " comes the one-letter state.
        return stat[close...].dropFirst(2).first != "Z"
    }

    /// Whether `pid` holds the socket listening on TCP `port` (IPv4 or IPv6); `nil` when the
    /// kernel's tables cannot be read here, so the caller relies on its other checks.
    public static func listens(_ pid: Int32, port: Int) -> Bool? {
        var inodes = Set<String>()
        var readable = false
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = readWhole(table) else { continue }
            readable = true
            inodes.formUnion(listeningInodes(in: text, port: port))
        }
        guard readable else { return nil }
        guard !inodes.isEmpty else { return false }
        let targets = Set(inodes.map { "socket:[\($0)]" })
        // readdir and readlink, not FileManager: descriptors of a busy process come and go
        // while the folder is read, and one that vanished must not fail the whole read.
        let fdFolder = "/proc/\(pid)/fd"
        guard let folder = opendir(fdFolder) else { return false }
        defer { closedir(folder) }
        var buffer = [CChar](repeating: 0, count: 64)
        while let entry = readdir(folder) {
            let name = entryName(entry)
            guard name.first?.isNumber == true else { continue }
            let count = readlink("\(fdFolder)/\(name)", &buffer, buffer.count)
            guard count > 0 else { continue }
            let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if targets.contains(target) { return true }
        }
        return false
    }

    /// Whether `pid` holds the exclusive `flock` on the file at `path`: one of its descriptors
    /// is open on that very file (the same device and inode) and the kernel lists a write lock
    /// of `flock`'s taken through that descriptor (`/proc/PID/fdinfo/N`). False when this user
    /// may not look into the process, or the file is gone.
    public static func holdsExclusiveLock(_ pid: Int32, on path: String) -> Bool {
        var file = stat()
        guard pid > 0, stat(path, &file) == 0 else { return false }
        let fdFolder = "/proc/\(pid)/fd"
        guard let folder = opendir(fdFolder) else { return false }
        defer { closedir(folder) }
        while let entry = readdir(folder) {
            let name = entryName(entry)
            guard name.first?.isNumber == true else { continue }
            var open = stat()
            guard stat("\(fdFolder)/\(name)", &open) == 0, open.st_dev == file.st_dev, open.st_ino == file.st_ino,
                let info = readWhole("/proc/\(pid)/fdinfo/\(name)")
            else { continue }
            if isExclusiveFlock(fdinfo: info, inode: UInt64(file.st_ino)) { return true }
        }
        return false
    }

    /// Whether a descriptor's `fdinfo` lists an exclusive `flock` on `inode`, in the kernel's
    /// words: `lock:\t1: FLOCK  ADVISORY  WRITE 1234 fe:00:16220718 0 EOF`.
    public static func isExclusiveFlock(fdinfo: String, inode: UInt64) -> Bool {
        fdinfo.split(separator: "\n").contains { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 7, fields[0] == "lock:" else { return false }
            return fields[2] == "FLOCK" && fields[4] == "WRITE" && fields[6].split(separator: ":").last == "\(inode)"
        }
    }

    /// The file name of the program `pid` runs (`/proc/PID/exe`); a program replaced since it
    /// started (an upgrade) still counts by its name. Nil when this user may not look.
    public static func programName(_ pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        var path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if path.hasSuffix(" (deleted)") { path.removeLast(" (deleted)".count) }
        return URL(fileURLWithPath: path).lastPathComponent
    }

    /// The descriptors this process has open now.
    public static func openDescriptors() -> [Int32] {
        guard let folder = opendir("/proc/self/fd") else { return [] }
        defer { closedir(folder) }
        let own = dirfd(folder)
        var result: [Int32] = []
        while let entry = readdir(folder) {
            if let fd = Int32(entryName(entry)), fd != own { result.append(fd) }
        }
        return result
    }

    /// The name of a directory entry, read up to its NUL. Not `entry.pointee.d_name`: that
    /// copies the whole 256-byte field, and a short entry at the end of readdir's buffer has
    /// fewer bytes behind it (reading past them crashed Foundation's Process.run the same way).
    static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        let start = UnsafeRawPointer(entry).advanced(by: offset).assumingMemoryBound(to: CChar.self)
        return String(cString: start)
    }

    /// A file of /proc, read to its end: such files report a size of 0 and are made as they
    /// are read, a page at a time.
    static func readWhole(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The inodes of sockets listening on `port` in one of the kernel's `/proc/net/tcp` tables.
    public static func listeningInodes(in table: String, port: Int) -> [String] {
        sockets(in: table, port: port).filter { $0.state == "0A" }.map(\.inode)
    }

    /// Whether a socket of this machine that does not listen (a connection's own end, in any
    /// state) has `port` as its local port, as far as `/proc/net/tcp` and `tcp6` show.
    public static func connectionHolds(port: Int) -> Bool {
        ["/proc/net/tcp", "/proc/net/tcp6"].contains { table in
            readWhole(table).map { sockets(in: $0, port: port).contains { $0.state != "0A" } } ?? false
        }
    }

    /// The sockets of a `/proc/net/tcp` table whose local port is `port`: their state (`0A`
    /// listens) and inode.
    static func sockets(in table: String, port: Int) -> [(state: Substring, inode: String)] {
        let wanted = String(port, radix: 16, uppercase: true)
        var found: [(state: Substring, inode: String)] = []
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
            guard fields.count > 9, let colon = fields[1].lastIndex(of: ":") else { continue }
            let localPort = fields[1][fields[1].index(after: colon)...]
            if localPort.drop(while: { $0 == "0" }) == wanted[...] { found.append((fields[3], String(fields[9]))) }
        }
        return found
    }
}
