import AsyncHTTPClient
import Foundation
import LocalHub
import LocalHubSupport
import Synchronization
import TestTiers

/// nginx (Debian's, from nginx-light) in front of hub nodes with the repository's front,
/// `deploy/nginx/hub.conf`, its ports and paths substituted, as a deployment would put it:
/// one port for clients, requests spread over the nodes, a dead node skipped, device streams
/// passed through unbuffered. Its folder (configuration, pid, error log, temporary files) is
/// new, under TMPDIR; stopping removes it.
///
/// nginx overwrites its environment with its process title, so Tests/run-tests' sweep cannot
/// find it by TEST_RUN_ID there: the folder's name holds the run's id, and so does nginx's
/// command line (`-p folder`), where the sweep also looks.
public final class NginxFront: Sendable {
    /// Where Debian installs nginx.
    public static let binary = "/usr/sbin/nginx"

    public let port: Int
    /// Its TLS listener's port (the certificate, self-signed, is `front.pem` in `folder`).
    public let tlsPort: Int
    /// Its folder: `nginx.conf`, `nginx.pid`, `error.log`, temporary files.
    public let folder: URL
    /// An HTTP client for requests through the front, with room for many long-lived device
    /// streams (the shared client opens 16 connections to a host at most); shut down by `stop`.
    public let client: HTTPClient
    private let process: ChildProcess.Running
    /// What nginx wrote to its standard output and error (before its error log opened).
    private let output: Output

    private final class Output: Sendable {
        let text = Mutex("")
    }

    /// `http://127.0.0.1:PORT`: the plain listener, for this machine's tools and terminals.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// `https://127.0.0.1:TLSPORT`: the listener for devices elsewhere.
    public var tlsURL: String { "https://127.0.0.1:\(tlsPort)" }

    private init(port: Int, tlsPort: Int, folder: URL, process: ChildProcess.Running, output: Output) {
        self.port = port
        self.tlsPort = tlsPort
        self.folder = folder
        self.process = process
        self.output = output
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 2048
        configuration.timeout.connect = .seconds(5)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// The repository's front, `deploy/nginx/hub.conf`: what the docs tell operators to install.
    public static var repositoryFile: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("deploy/nginx/hub.conf")
    }

    /// `deploy/nginx/hub.conf` with its ports and paths substituted, nothing else: one
    /// `server` line per node of `upstreams` (`host:port` each) with the file's options, the
    /// TLS listener on `tls` and the plain one on `listen` (`host:port` each), the
    /// certificate and key in `certificates`.
    public static func front(upstreams: [String], listen: String, tls: String, certificates: String) throws -> String {
        let file = try String(contentsOf: repositoryFile, encoding: .utf8)
        var lines: [String] = []
        var serversWritten = false
        for line in file.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("server 127.0.0.1:") {
                // The file names two nodes; a test has as many as it started.
                guard !serversWritten else { continue }
                serversWritten = true
                let indent = String(line.prefix { $0 == " " })
                let options = trimmed.split(separator: " ").dropFirst(2).joined(separator: " ")
                lines += upstreams.map { "\(indent)server \($0) \(options)" }
            } else if trimmed == "listen 443 ssl;" {
                lines.append(line.replacingOccurrences(of: "443", with: tls))
            } else if trimmed == "listen 127.0.0.1:47474;" {
                lines.append(line.replacingOccurrences(of: "127.0.0.1:47474", with: listen))
            } else {
                lines.append(line.replacingOccurrences(of: "/etc/ssl/breaking-news", with: certificates))
            }
        }
        guard serversWritten, lines.contains(where: { $0.contains("listen \(tls) ssl;") }) else {
            throw NginxFrontError(description: "\(repositoryFile.path) lost its server or listen lines")
        }
        return lines.joined(separator: "\n")
    }

    /// The main configuration of a test's front, in `folder`: nginx's settings outside
    /// `http {}` as the docs give them (`worker_shutdown_timeout` unless `stock`, Debian's
    /// nginx.conf as it comes), its pid, logs and temporary files in the folder, and the
    /// folder's `conf.d/*.conf` included inside `http {}`, as Debian's nginx.conf does.
    public static func main(folder: String, stock: Bool = false) -> String {
        let paths = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map { "  \($0)_temp_path \(folder)/\($0);\n" }
        return """
            worker_processes 1;
            \(stock ? "" : "worker_shutdown_timeout 10s;\n")\
            pid \(folder)/nginx.pid;
            error_log \(folder)/error.log warn;
            events { worker_connections 4096; }
            http {
              access_log off;
            \(paths.joined())\
              include \(folder)/conf.d/*.conf;
            }

            """
    }

    /// Runs `body` with a front started for it, and stops the front afterwards, also when
    /// `body` throws.
    public static func with<T>(upstreams: [Int], _ body: (NginxFront) async throws -> T) async throws -> T {
        let front = try await start(upstreams: upstreams)
        do {
            let result = try await body(front)
            await front.stop()
            return result
        } catch {
            await front.stop()
            throw error
        }
    }

    /// Starts nginx on a free loopback port in front of the nodes listening on `upstreams`
    /// (loopback ports); prefer `with`, which also stops it. A front started here must be
    /// stopped with `await stop()`.
    public static func start(upstreams: [Int]) async throws -> NginxFront {
        try TestTier.requireFullSuite("nginx")
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw NginxFrontError(description: "nginx is not installed (\(binary) is missing; apt-get install nginx-light)")
        }
        let run = (ProcessInfo.processInfo.environment["TEST_RUN_ID"] ?? "").filter {
            $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "nginx-\(run.isEmpty ? "norun" : run)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // The port is free when chosen but may be taken before nginx binds it.
        var failure = NginxFrontError(description: "nginx did not start")
        for _ in 0..<3 {
            do {
                return try await launch(upstreams: upstreams, port: try freePort(), tlsPort: try freePort(), folder: folder)
            } catch let error as NginxFrontError {
                failure = error
                guard error.description.contains("Address already in use") else { break }
            }
        }
        try? FileManager.default.removeItem(at: folder)
        throw failure
    }

    private static func launch(upstreams: [Int], port: Int, tlsPort: Int, folder: URL) async throws -> NginxFront {
        let file = folder.appendingPathComponent("nginx.conf")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("conf.d"), withIntermediateDirectories: true)
        _ = try SelfSignedCertificate.serverConfiguration(in: folder)
        for (made, named) in [(SelfSignedCertificate.certificateFile, "front.pem"), (SelfSignedCertificate.keyFile, "front.key")]
        where !FileManager.default.fileExists(atPath: folder.appendingPathComponent(named).path) {
            try FileManager.default.copyItem(at: folder.appendingPathComponent(made), to: folder.appendingPathComponent(named))
        }
        let included = try front(
            upstreams: upstreams.map { "127.0.0.1:\($0)" }, listen: "127.0.0.1:\(port)", tls: "127.0.0.1:\(tlsPort)",
            certificates: folder.path)
        try Data(included.utf8).write(to: folder.appendingPathComponent("conf.d/breaking-news.conf"))
        try Data(main(folder: folder.path).utf8).write(to: file)
        let errorLog = folder.appendingPathComponent("error.log").path
        try? FileManager.default.removeItem(atPath: errorLog)
        let process = try ChildProcess.start([
            binary, "-e", errorLog, "-p", folder.path + "/", "-c", file.path, "-g", "daemon off;",
        ])
        let output = Output()
        for descriptor in [process.standardOutput, process.standardError] { collect(descriptor, into: output) }
        let front = NginxFront(port: port, tlsPort: tlsPort, folder: folder, process: process, output: output)
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning, Date() < deadline {
            if case .success(let socket) = Loopback.connect(port: port) {
                close(socket)
                // Something listens: nginx, unless it failed to bind (and ends now).
                try await Task.sleep(nanoseconds: 100_000_000)
                if process.isRunning { return front }
            }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        await front.stop(removing: false)
        let log = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
        throw NginxFrontError(
            description: "nginx did not start on port \(port): \(output.text.withLock { $0 })\(log)".trimmingCharacters(
                in: .whitespacesAndNewlines))
    }

    /// Stops nginx (SIGQUIT: it finishes what it serves; SIGKILL, to it and its workers,
    /// after 10 s), waits for it, and removes its folder.
    public func stop() async {
        await stop(removing: true)
    }

    private func stop(removing: Bool) async {
        try? await client.shutdown()
        let workers = Self.children(of: process.pid)
        process.signal(SIGQUIT)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { try? await Task.sleep(nanoseconds: 20_000_000) }
        if process.isRunning {
            process.signal(SIGKILL)
            // Workers outlive a killed master.
            for worker in workers { kill(worker, SIGKILL) }
        }
        await process.exited()
        if removing {
            let folder = self.folder
            try? await offThePool { try FileManager.default.removeItem(at: folder) }
        }
    }

    /// The processes whose parent is `pid`.
    /// Its worker processes now.
    public var workers: [pid_t] { Self.children(of: process.pid) }

    /// Asks nginx to load its configuration again (SIGHUP, as `nginx -s reload`): new workers
    /// start, and the old ones finish, ending their device streams after
    /// `worker_shutdown_timeout`.
    public func reload() { _ = kill(process.pid, SIGHUP) }

    private static func children(of pid: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let child = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let name = stat.lastIndex(of: ")")
            else { return nil }
            // pid (comm) state ppid …
            let fields = stat[stat.index(after: name)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == pid ? child : nil
        }
    }

    /// Reads `descriptor` to its end on a thread of its own, keeping the first 64 KB read.
    private static func collect(_ descriptor: Int32, into output: Output) {
        let thread = Thread {
            defer { close(descriptor) }
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return }
                let text = String(decoding: buffer[..<count], as: UTF8.self)
                output.text.withLock { if $0.utf8.count < 65536 { $0 += text } }
            }
        }
        thread.name = "nginx output"
        thread.start()
    }

    /// A loopback port nothing listens on now, below Linux's ephemeral range (32768-60999),
    /// where a client connection's own port could take it before it is bound again: bound,
    /// read and let go. For nodes that must come back on the port they had.
    public static func freePort() throws -> Int {
        for _ in 0..<100 {
            let port = Int.random(in: 20_000..<32_000)
            if LoopbackPort.isFree(port) { return port }
        }
        throw NginxFrontError(description: "no free loopback port in 20000-31999")
    }
}

public struct NginxFrontError: Error, CustomStringConvertible, Sendable {
    public let description: String
}
