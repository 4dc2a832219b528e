import AsyncHTTPClient
import Foundation
import LocalHubSupport
import Synchronization
import TestTiers

/// nginx (Debian's, from nginx-light) in front of hub nodes, as a deployment would put it:
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

    /// `http://127.0.0.1:PORT`.
    public var url: String { "http://127.0.0.1:\(port)" }

    private init(port: Int, folder: URL, process: ChildProcess.Running, output: Output) {
        self.port = port
        self.folder = folder
        self.process = process
        self.output = output
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 2048
        configuration.timeout.connect = .seconds(5)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// The configuration for a front listening on `listen` (`host:port`) to hub nodes at
    /// `upstreams` (`host:port` each). Without paths: nginx's defaults for pid, logs and
    /// temporary files apply (a test's front writes its own).
    public static func configuration(upstreams: [String], listen: String) -> String {
        configuration(upstreams: upstreams, listen: listen, folder: nil)
    }

    static func configuration(upstreams: [String], listen: String, folder: String?) -> String {
        let paths = folder.map { folder in
            ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map { "  \($0)_temp_path \(folder)/\($0);\n" }.joined()
        }
        let servers = upstreams.map { "    server \($0) max_fails=1 fail_timeout=2s;\n" }.joined()
        return """
            worker_processes 1;
            # A reload or stop waits this long for device streams, then ends them: clients
            # resume them, on the new workers, after their Last-Event-ID.
            worker_shutdown_timeout 5s;
            \(folder.map { "pid \($0)/nginx.pid;\nerror_log \($0)/error.log warn;\n" } ?? "")\
            events { worker_connections 4096; }
            http {
              access_log off;
            \(paths ?? "")\
              upstream hub {
            \(servers)\
                # Connections to the nodes are kept and reused; closed before a node's idle
                # timeout (30 s) could close one under a request.
                keepalive 32;
                keepalive_timeout 20s;
              }
              server {
                listen \(listen);
                location / {
                  proxy_pass http://hub;
                  proxy_http_version 1.1;
                  proxy_set_header Connection "";
                  # The hub checks SAS token audiences, and writes Location headers, with the
                  # host the client used.
                  proxy_set_header Host $http_host;
                  # Who the client is, for the nodes' per-client limits (with --trusted-proxy).
                  proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
                  # Device streams (Server-Sent Events) pass through as the hub writes them,
                  # and stay open for as long as the client keeps them.
                  proxy_buffering off;
                  proxy_cache off;
                  proxy_read_timeout 3600s;
                  proxy_send_timeout 3600s;
                  # A node that refuses or fails is skipped (for 2 s): the request goes to the
                  # next one, unless a node had it already and it is a POST (a send is never
                  # repeated: its client gets 502 and decides).
                  proxy_next_upstream error timeout http_502;
                  proxy_next_upstream_tries 3;
                }
              }
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
                return try await launch(upstreams: upstreams, port: try freePort(), folder: folder)
            } catch let error as NginxFrontError {
                failure = error
                guard error.description.contains("Address already in use") else { break }
            }
        }
        try? FileManager.default.removeItem(at: folder)
        throw failure
    }

    private static func launch(upstreams: [Int], port: Int, folder: URL) async throws -> NginxFront {
        let file = folder.appendingPathComponent("nginx.conf")
        let text = configuration(
            upstreams: upstreams.map { "127.0.0.1:\($0)" }, listen: "127.0.0.1:\(port)", folder: folder.path)
        try Data(text.utf8).write(to: file)
        let errorLog = folder.appendingPathComponent("error.log").path
        try? FileManager.default.removeItem(atPath: errorLog)
        let process = try ChildProcess.start([
            binary, "-e", errorLog, "-p", folder.path + "/", "-c", file.path, "-g", "daemon off;",
        ])
        let output = Output()
        for descriptor in [process.standardOutput, process.standardError] { collect(descriptor, into: output) }
        let front = NginxFront(port: port, folder: folder, process: process, output: output)
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
