import Foundation
import HubTestSupport
import LocalHubSupport

/// pgbench, the cluster rows' peer: what the PostgreSQL server the nodes use can take by
/// itself, with the scripts in Benchmarks/pgbench. Each run gets a fresh database on
/// `server`, made with the table of schema.sql and dropped after.
struct PgbenchPeer {
    /// pgbench's rate of one durable single-row upsert per transaction, 32 clients, per run.
    var singleRow: [Double] = []
    /// Rows per second of 100-row upserts, 2 clients, per run.
    var batchRows: [Double] = []

    static let folder = root.appendingPathComponent("Benchmarks/pgbench")
    static let clients = 32
    static let batchClients = 2
    static let rowsPerBatch = 100.0

    /// `runs` runs of each script, `seconds` each, on `server`.
    static func measure(server: PostgresServer, runs: Int, seconds: Int) async throws -> PgbenchPeer {
        guard let pgbench = pgbenchPath(server: server) else {
            throw BenchError(
                description: "pgbench is missing (Debian ships it with postgresql, in /usr/lib/postgresql/VERSION/bin)")
        }
        let bytes = try jsonBytes()
        log("pgbench: \(pgbench), json of \(bytes) bytes (the PUT body), \(seconds) s per run")
        var peer = PgbenchPeer()
        for run in 0..<runs {
            let single = try await once(
                pgbench, server: server, script: "single-row-upsert.sql", clients: clients, seconds: seconds, bytes: bytes)
            let batch = try await once(
                pgbench, server: server, script: "batch-upsert.sql", clients: batchClients, seconds: seconds, bytes: bytes)
            peer.singleRow.append(single)
            peer.batchRows.append(batch * rowsPerBatch)
            log(
                "pgbench run \(run + 1): single-row upsert \(Int(single)) tps (\(clients) clients), 100-row upserts "
                    + "\(Int(batch * rowsPerBatch)) rows/s (\(Int(batch)) tps, \(batchClients) clients)")
        }
        return peer
    }

    /// Its rows, reported (the cluster rows hold the targets against it).
    var rows: [BenchRow] {
        [
            BenchRow(
                scenario: "pgbench: one durable single-row upsert per transaction, \(Self.clients) clients",
                value: median(singleRow), unit: "transactions/s", target: "(reported)", met: true),
            BenchRow(
                scenario: "pgbench: 100-row upserts per transaction, \(Self.batchClients) clients",
                value: median(batchRows), unit: "rows/s", target: "(reported)", met: true),
        ]
    }

    /// One pgbench run of `script` on a fresh database; its `tps = …`.
    private static func once(
        _ pgbench: String, server: PostgresServer, script: String, clients: Int, seconds: Int, bytes: Int
    ) async throws -> Double {
        let name = "pgbench_\(UInt64.random(in: 0...UInt64.max))"
        let database = try await server.createDatabase(name)
        try await server.psql(
            try String(contentsOf: folder.appendingPathComponent("schema.sql"), encoding: .utf8), database: database)
        let arguments = [
            "-n", "-h", "127.0.0.1", "-p", String(server.port), "-U", PostgresServer.user, "-M", "prepared",
            "-c", String(clients), "-j", String(min(clients, 2)), "-T", String(seconds), "-D", "json_bytes=\(bytes)",
            "-f", folder.appendingPathComponent(script).path, name,
        ]
        // Started clean of this process's signal mask: Foundation's Process would hand it the
        // pool thread's, which blocks SIGALRM, and pgbench's -T timer is an alarm (it then
        // never stopped).
        let child = try ChildProcess.start([pgbench] + arguments)
        async let printed = offThePool { readAll(child.standardOutput) }
        async let errors = offThePool { readAll(child.standardError) }
        let deadline = Date().addingTimeInterval(Double(seconds) * 3 + 60)
        var killed = false
        while child.isRunning {
            if Date() > deadline, !killed {
                log("pgbench \(script) still runs long after its \(seconds) s: killed")
                child.signal(SIGKILL)
                killed = true
            }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        let status = await child.exited()
        let output = try await printed + errors
        // Dropped so the runs' tables (a few hundred MB for the batches) do not pile up.
        try await server.psql("DROP DATABASE \(name) WITH (FORCE)")
        guard status == 0,
            let line = output.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
            let tps = line.dropFirst("tps = ".count).split(separator: " ").first.flatMap({ Double($0) })
        else {
            throw BenchError(description: "pgbench \(script) failed (\(status)): \(output)")
        }
        if let failed = output.split(separator: "\n").first(where: { $0.hasPrefix("number of failed transactions: ") }),
            !failed.hasPrefix("number of failed transactions: 0 ")
        {
            throw BenchError(description: "pgbench \(script): \(failed)")
        }
        return tps
    }

    /// The size of the PUT body of Benchmarks/scripts/put-installation.http as the load
    /// generator sends it in the first run (its id `c0-` and a number of four digits).
    static func jsonBytes() throws -> Int {
        let text = try String(contentsOf: scripts.appendingPathComponent("put-installation.http"), encoding: .utf8)
        guard let blank = text.range(of: "\n\n") else {
            throw BenchError(description: "put-installation.http has no blank line before its body")
        }
        let body = text[blank.upperBound...].trimmingCharacters(in: .newlines)
        return body.replacingOccurrences(of: "{{ID}}", with: "c0-5000").utf8.count
    }

    /// The pgbench of the server's own PostgreSQL (beside the binary its postmaster runs),
    /// else of the highest version in /usr/lib/postgresql, else on PATH: where the tests'
    /// PostgresServer finds initdb and pg_ctl.
    static func pgbenchPath(server: PostgresServer) -> String? {
        let fileManager = FileManager.default
        if let postgres = try? fileManager.destinationOfSymbolicLink(atPath: "/proc/\(server.pid)/exe") {
            let beside = URL(fileURLWithPath: postgres).deletingLastPathComponent().appendingPathComponent("pgbench").path
            if fileManager.isExecutableFile(atPath: beside) { return beside }
        }
        let versions = ((try? fileManager.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .filter { fileManager.isExecutableFile(atPath: "/usr/lib/postgresql/\($0)/bin/pgbench") }
            .sorted {
                $0.split(separator: ".").compactMap { Int($0) }.lexicographicallyPrecedes(
                    $1.split(separator: ".").compactMap { Int($0) })
            }
        if let highest = versions.last { return "/usr/lib/postgresql/\(highest)/bin/pgbench" }
        return which("pgbench")
    }
}
