import Foundation
import LocalHubSupport
import Synchronization
import TestTiers

/// A PostgreSQL server of a test's own: the installed binaries (Debian keeps them in
/// /usr/lib/postgresql/VERSION/bin, off PATH) run a fresh cluster on a free loopback port,
/// trusting every connection from this machine, its files in a new folder under /tmp.
///
/// The folder is not under TMPDIR: the tests' TMPDIR lies inside the checkout, which the
/// `postgres` user (whom root must run the server as: PostgreSQL refuses root) may not be
/// able to reach. It holds `data` (the cluster), `log`, the Unix socket and `owner`, which
/// names the test run and TMPDIR that started it: Tests/run-tests stops the servers a run
/// left behind, a crashed one's too, and removes their folders.
///
/// Waiting on the server's tools never holds a thread of Swift's cooperative pool.
public final class PostgresServer: Sendable {
    /// The superuser a cluster is made with unless told otherwise, whom `url` names.
    public static let user = "hub"
    /// Where the server's folders are made (a random suffix follows).
    public static let folderPrefix = "/tmp/breaking-news-pg-"

    public let port: Int
    /// This cluster's superuser (`user` unless `start` was told another).
    public let superuser: String
    /// The server's folder: `data`, `log`, the socket, `owner`. Removed by `stop`.
    public let directory: URL
    let tools: PostgresTools
    /// The postmaster's pid, the latest when it was paused and resumed; 0 before it starts.
    private let postmaster = Mutex<Int32>(0)

    private init(port: Int, superuser: String, directory: URL, tools: PostgresTools) {
        self.port = port
        self.superuser = superuser
        self.directory = directory
        self.tools = tools
    }

    /// The database `postgres`, which every cluster has.
    public var url: String { url(database: "postgres") }

    /// The pid of the server's postmaster (the one of its latest start).
    public var pid: Int32 { postmaster.withLock { $0 } }

    /// Whether its postmaster runs (not while paused, nor after `stop`).
    public var isRunning: Bool { LocalProcess.isAlive(pid) }

    /// A URL of `database` for a client: the superuser, no password, no TLS.
    public func url(database: String) -> String {
        "postgres://\(superuser)@127.0.0.1:\(port)/\(database)"
    }

    private var dataPath: String { directory.appendingPathComponent("data").path }
    private var logPath: String { directory.appendingPathComponent("log").path }

    /// Runs `body` with a server started for it, and stops the server afterwards, also when
    /// `body` throws.
    public static func with<T>(_ body: (PostgresServer) async throws -> T) async throws -> T {
        let server = try await start()
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    /// Makes a cluster and starts a server on it; prefer `with`, which also stops it. A
    /// server started here must be stopped with `await stop()`.
    ///
    /// `superuser` names the cluster's superuser (`postgres`, as Debian's, for a test that
    /// runs the docs' commands); `passwordRoles` log in over TCP only with their password
    /// (scram-sha-256), as Debian's server asks of every role, while every other is trusted.
    /// `tls` turns TLS on with a certificate for `localhost` that a CA of the server's own
    /// signed (`tlsFiles`).
    public static func start(superuser: String = user, passwordRoles: [String] = [], tls: Bool = false) async throws
        -> PostgresServer
    {
        try TestTier.requireFullSuite("a PostgreSQL server")
        let tools = try PostgresTools.locate()
        let directory = try makeFolder(for: tools)
        do {
            let created = try await tools.run(
                [
                    tools.initdb, "-D", directory.appendingPathComponent("data").path, "-A", "trust", "-U", superuser, "-E",
                    "UTF8",
                    "--locale=C", "--no-sync",
                ], asServer: true, in: directory.path)
            guard created.status == 0 else {
                throw PostgresServerError(description: "initdb failed (\(created.status)): \(created.output)")
            }
            if tls { try makeTLSFiles(in: directory, tools: tools) }
            if !passwordRoles.isEmpty {
                // The first line that matches decides: these go before the trusting ones.
                let file = directory.appendingPathComponent("data/pg_hba.conf")
                let lines = passwordRoles.map {
                    "host all \($0) 127.0.0.1/32 scram-sha-256\nhost all \($0) ::1/128 scram-sha-256\n"
                }
                try Data((lines.joined() + String(contentsOf: file, encoding: .utf8)).utf8).write(to: file)
            }
            // The port is free when chosen but may be taken before the server binds it.
            var failure = PostgresServerError(description: "PostgreSQL did not start")
            for _ in 0..<3 {
                let server = PostgresServer(port: try freePort(), superuser: superuser, directory: directory, tools: tools)
                do {
                    try await server.launch()
                    return server
                } catch let error as PostgresServerError where error.portTaken {
                    failure = error
                }
            }
            throw failure
        } catch {
            try? await offThePool { try FileManager.default.removeItem(at: directory) }
            throw error
        }
    }

    /// Makes a new, empty database (a name of letters, digits and `_`, a fresh one by
    /// default); returns its URL.
    @discardableResult
    public func createDatabase(_ name: String = "test_\(UInt64.random(in: 0...UInt64.max))") async throws -> String {
        guard !name.isEmpty, name.count < 64, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
        else { throw PostgresServerError(description: "not a plain database name: \(name)") }
        let outcome = try await tools.run(
            [tools.createdb, "-h", "127.0.0.1", "-p", String(port), "-U", superuser, name], asServer: false,
            in: directory.path)
        guard outcome.status == 0 else {
            throw PostgresServerError(description: "createdb \(name) failed (\(outcome.status)): \(outcome.output)")
        }
        return url(database: name)
    }

    /// Runs `sql` with psql against `database` (a URL; `url` by default), stopping at the
    /// first error; returns what it printed, unaligned and without headers.
    @discardableResult
    public func psql(_ sql: String, database: String? = nil) async throws -> String {
        let outcome = try await tools.run(
            [tools.psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", database ?? url, "-c", sql], asServer: false,
            in: directory.path)
        guard outcome.status == 0 else {
            throw PostgresServerError(description: "psql failed (\(outcome.status)): \(outcome.output)")
        }
        return outcome.output
    }

    /// Stops the server (a fast shutdown: sessions are ended, nothing is lost) and keeps its
    /// data, for `resume`.
    public func pause() async throws {
        let outcome = try await pgCtl(["stop", "-m", "fast"])
        guard outcome.status == 0 else {
            throw PostgresServerError(description: "pg_ctl stop failed (\(outcome.status)): \(outcome.output)")
        }
        await waitUntilGone(pid)
    }

    /// Starts the paused server again, on the same port, and waits until it accepts
    /// connections.
    public func resume() async throws {
        try await launch()
    }

    /// Stops the server (fast, killed when that fails) and removes its folder.
    public func stop() async {
        let pid = self.pid
        if FileManager.default.fileExists(atPath: dataPath + "/postmaster.pid") {
            _ = try? await pgCtl(["stop", "-m", "fast"])
        }
        if LocalProcess.isAlive(pid) {
            await waitUntilGone(pid, within: .seconds(10))
            if LocalProcess.isAlive(pid) { kill(pid, SIGKILL) }
        }
        await waitUntilGone(pid)
        let directory = self.directory
        try? await offThePool { try FileManager.default.removeItem(at: directory) }
    }

    /// Starts the postmaster on `port` with pg_ctl, which waits until it is ready.
    private func launch() async throws {
        let logStart = (try? FileManager.default.attributesOfItem(atPath: logPath)[.size] as? Int) ?? 0
        var options = "-p \(port) -k \(directory.path) -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=200"
        let files = tlsFiles
        if FileManager.default.fileExists(atPath: files.key.path) {
            options += " -c ssl=on -c ssl_cert_file=\(files.certificate.path) -c ssl_key_file=\(files.key.path)"
        }
        // The run's id in the command lines of the postmaster and its processes (the cluster
        // name shows in theirs): run-tests' sweep finds them by it.
        let cluster = PostgresTools.runID.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        if !cluster.isEmpty { options += " -c cluster_name=\(cluster)" }
        let outcome = try await pgCtl(["start", "-l", logPath, "-p", tools.postgres, "-o", options])
        guard outcome.status == 0 else {
            let log = (try? Data(contentsOf: URL(fileURLWithPath: logPath))).map {
                String(decoding: $0.dropFirst(logStart), as: UTF8.self)
            }
            // It may have started after all (pg_ctl gave up waiting): stop it.
            if FileManager.default.fileExists(atPath: dataPath + "/postmaster.pid") {
                _ = try? await pgCtl(["stop", "-m", "immediate"])
            }
            throw PostgresServerError(
                description: "PostgreSQL did not start on port \(port) (\(outcome.status)): \(outcome.output)\(log ?? "")",
                portTaken: log?.contains("Address already in use") ?? false)
        }
        guard let pidFile = try? String(contentsOfFile: dataPath + "/postmaster.pid", encoding: .utf8),
            let pid = pidFile.split(separator: "\n").first.flatMap({ Int32($0.trimmingCharacters(in: .whitespaces)) })
        else { throw PostgresServerError(description: "PostgreSQL started without a readable postmaster.pid") }
        postmaster.withLock { $0 = pid }
        let port = self.port
        guard try await offThePool({ Loopback.waitForListener(port: port, within: .seconds(30)) }) else {
            throw PostgresServerError(description: "PostgreSQL started but accepts no connection on port \(port)")
        }
    }

    /// Runs pg_ctl `arguments` on the data folder (as the server's user), waiting for it.
    private func pgCtl(_ arguments: [String]) async throws -> PostgresTools.Outcome {
        try await tools.run([tools.pgCtl] + arguments + ["-D", dataPath, "-w", "-t", "60"], asServer: true, in: directory.path)
    }

    /// Waits (up to `limit`) for `pid` to end: pg_ctl is done when the pid file is gone,
    /// a moment before the postmaster itself.
    private func waitUntilGone(_ pid: Int32, within limit: Duration = .seconds(5)) async {
        let deadline = ContinuousClock.now + limit
        while LocalProcess.isAlive(pid), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// A new folder under /tmp, with its `owner` file, given to the server's user.
    private static func makeFolder(for tools: PostgresTools) throws -> URL {
        var template = Array((folderPrefix + "XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw PostgresServerError(description: "cannot make a folder under /tmp: \(String(cString: strerror(errno)))")
        }
        let directory = URL(fileURLWithPath: String(cString: made))
        let environment = ProcessInfo.processInfo.environment
        let owner = "TEST_RUN_ID=\(PostgresTools.runID)\nTMPDIR=\(environment["TMPDIR"] ?? "")\n"
        let ownerFile = directory.appendingPathComponent("owner")
        do {
            try Data(owner.utf8).write(to: ownerFile)
            if let account = tools.serverAccount {
                for path in [directory.path, ownerFile.path] where chown(path, account.uid, account.gid) != 0 {
                    throw PostgresServerError(description: "cannot give \(path) to postgres: \(String(cString: strerror(errno)))")
                }
            }
            guard chmod(directory.path, 0o700) == 0 else {
                throw PostgresServerError(description: "cannot restrict \(directory.path): \(String(cString: strerror(errno)))")
            }
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        return directory
    }

    /// A loopback port nothing listens on now: bound, read and let go.
    private static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw PostgresServerError(description: "cannot make a socket") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            throw PostgresServerError(description: "cannot bind a loopback port: \(String(cString: strerror(errno)))")
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Why a PostgreSQL server could not be had.
public struct PostgresServerError: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// The server did not start because another process held its port.
    let portTaken: Bool

    init(description: String, portTaken: Bool = false) {
        self.description = description
        self.portTaken = portTaken
    }

    public static let notInstalled = PostgresServerError(description: "PostgreSQL is not installed (apt-get install postgresql)")
}

/// The PostgreSQL programs, and how to run the server's: as the `postgres` user when this
/// process is root, which initdb and postgres refuse to run as.
struct PostgresTools: Sendable {
    let initdb: String
    let pgCtl: String
    let postgres: String
    let psql: String
    let createdb: String
    /// The `postgres` account the server runs as; nil when not root (it runs as this user).
    let serverAccount: (uid: uid_t, gid: gid_t)?
    let runuser: String?

    /// What a program printed (standard output, then error) and how it ended.
    struct Outcome: Sendable {
        let status: Int32
        let output: String
    }

    /// This test run's id, which Tests/run-tests sets; empty outside it.
    static var runID: String { ProcessInfo.processInfo.environment["TEST_RUN_ID"] ?? "" }

    /// The programs of the highest version in /usr/lib/postgresql, or else on PATH.
    static func locate() throws -> PostgresTools {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .filter { FileManager.default.isExecutableFile(atPath: "\(root)/\($0)/bin/initdb") }
            .sorted {
                $0.split(separator: ".").compactMap { Int($0) }.lexicographicallyPrecedes(
                    $1.split(separator: ".").compactMap { Int($0) })
            }
        let folders =
            versions.reversed().map { "\(root)/\($0)/bin" }
            + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(
                String.init)
        func find(_ name: String) throws -> String {
            guard let folder = folders.first(where: { FileManager.default.isExecutableFile(atPath: "\($0)/\(name)") }) else {
                throw PostgresServerError.notInstalled
            }
            return "\(folder)/\(name)"
        }
        var account: (uid: uid_t, gid: gid_t)?
        var runuser: String?
        if geteuid() == 0 {
            guard let entry = getpwnam("postgres") else {
                throw PostgresServerError(
                    description: "PostgreSQL refuses to run as root, and there is no postgres user to run it as")
            }
            account = (entry.pointee.pw_uid, entry.pointee.pw_gid)
            runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].first {
                FileManager.default.isExecutableFile(atPath: $0)
            }
            guard runuser != nil else {
                throw PostgresServerError(description: "runuser is missing (apt-get install util-linux)")
            }
        }
        return PostgresTools(
            initdb: try find("initdb"), pgCtl: try find("pg_ctl"), postgres: try find("postgres"), psql: try find("psql"),
            createdb: try find("createdb"), serverAccount: account, runuser: runuser)
    }

    /// Runs `argv` in `directory` (as the server's user when `asServer`) and waits for it,
    /// reading its output on threads of their own.
    func run(_ argv: [String], asServer: Bool, in directory: String) async throws -> Outcome {
        let command = asServer && runuser != nil ? [runuser!, "-u", "postgres", "--"] + argv : argv
        let child = try ChildProcess.start(command, directory: directory)
        async let output = offThePool { readAll(child.standardOutput) }
        async let errors = offThePool { readAll(child.standardError) }
        let status = await child.exited()
        let text = try await output + errors
        return Outcome(status: status, output: text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

}
