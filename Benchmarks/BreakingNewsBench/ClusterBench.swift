import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs

/// `--only cluster` (`make bench-cluster`): ingest, durable sends and fan-out on the single
/// SQLite node, on one node on PostgreSQL, and on three nodes on PostgreSQL behind nginx, then
/// pgbench on the same PostgreSQL server, all in the same run. The database and nginx are real
/// servers started here (the tests' own helpers), stopped after. Every row of a PostgreSQL
/// setup carries its target against a peer of the same run (issue 32): the SQLite node, the
/// one PostgreSQL node, pgbench; and each setup's spread over its runs against the SQLite
/// node's.
func clusterBench(loadgen: String, fanoutClient: String, runs: Int, pgbenchSeconds: Int) async throws -> [BenchRow] {
    let sqliteHub = try await BenchHub.start(binary: binary, directory: output.appendingPathComponent("cluster-sqlite"))
    let sqlite = try await clusterFigures(
        sqliteHub, setup: ClusterSetup.sqlite, loadgen: loadgen, fanoutClient: fanoutClient, runs: runs,
        processes: [sqliteHub])
    sqliteHub.stop()
    let (solo, three, apart, pgbench) = try await PostgresServer.with { database in
        try await recycleWAL(database, segments: walSegments)
        let soloHub = try await BenchHub.start(
            binary: binary, directory: output.appendingPathComponent("cluster-pg1"),
            arguments: ["--store", try await database.createDatabase(), "--node", "solo"])
        let solo = try await clusterFigures(
            soloHub, setup: ClusterSetup.solo, loadgen: loadgen, fanoutClient: fanoutClient, runs: runs,
            processes: [soloHub])
        soloHub.stop()
        /// Three nodes, the nth on `store(n)` (asked once the nodes before it run), measured
        /// through nginx, then stopped.
        func threeBehindNginx(
            name: String, setup: String, fanout: Bool, store: (Int) async throws -> String
        ) async throws -> ClusterFigures {
            var nodes: [BenchHub] = []
            defer { for node in nodes { node.stop() } }
            for n in 1...3 {
                nodes.append(
                    try await BenchHub.start(
                        binary: binary, directory: output.appendingPathComponent("cluster-\(name)\(n)"),
                        arguments: ["--store", try await store(n), "--node", "\(name)\(n)", "--trusted-proxy", "127.0.0.1"]))
            }
            return try await NginxFront.with(upstreams: nodes.map(\.port)) { front in
                try await clusterFigures(
                    try nodes[0].behind(url: front.url, port: front.port), setup: setup, loadgen: loadgen,
                    fanoutClient: fanoutClient, runs: runs, fanout: fanout, processes: nodes)
            }
        }
        let following = try await followerApplyCPU(database: database, loadgen: loadgen, runs: runs)
        let shared = try await database.createDatabase()
        let three = try await threeBehindNginx(name: "node", setup: ClusterSetup.three, fanout: true) { _ in shared }
        // The same three nodes and front with nothing to coordinate: each node on a database
        // of its own, holding the first node's keys (copied by `hub migrate` once it has made
        // them), so that any node answers any request. What this setup reaches is the most
        // three nodes can do on this machine whatever the coordination costs; it is reported,
        // not judged.
        let first = try await database.createDatabase()
        let apart = try await threeBehindNginx(name: "apart", setup: ClusterSetup.apart, fanout: false) { n in
            guard n > 1 else { return first }
            let store = try await database.createDatabase()
            let copy = try runProgram(binary, ["hub", "migrate", "--store", first, "--to", store])
            if copy.status != 0 { throw BenchError(description: "hub migrate to \(store) exited \(copy.status)") }
            return store
        }
        // What a delivery costs on disk, on the same server (`bytesPerDelivery`, as `make bench`
        // measures it on SQLite).
        let logged = try await database.createDatabase()
        let bytes = try await bytesPerDelivery(
            binary: binary, directory: output.appendingPathComponent("cluster-bytes"), arguments: ["--store", logged]
        ) { _ in
            Int64(
                try await database.psql("SELECT pg_database_size(current_database())", database: logged)
                    .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        log("cluster: \(String(format: "%.1f", bytes)) bytes per delivery on PostgreSQL")
        let largest = try await database.psql(
            """
            SELECT string_agg(relname || ' ' || pg_relation_size(oid), ', ' ORDER BY pg_relation_size(oid) DESC)
            FROM (SELECT oid, relname FROM pg_class WHERE relnamespace = 'public'::regnamespace
                ORDER BY pg_relation_size(oid) DESC LIMIT 12) r
            """, database: logged)
        log("cluster: where the bytes are (relation, bytes): \(largest.trimmingCharacters(in: .whitespacesAndNewlines))")
        // pgbench has the server to itself: the nodes are stopped first.
        let pgbench = try await PgbenchPeer.measure(server: database, runs: runs, seconds: pgbenchSeconds)
        return (solo, three, apart, (pgbench, bytes, following))
    }
    return clusterRows(sqlite: sqlite, solo: solo, three: three, apart: apart, pgbench: pgbench.0)
        + [
            BenchRow(
                scenario: "bytes per delivery, PostgreSQL (100-byte message to 100 devices, all included)",
                value: pgbench.1, unit: "bytes", target: "<= 150", met: pgbench.1 <= 150),
            BenchRow(
                scenario: "cluster follower CPU to apply a PUT another node wrote", value: median(pgbench.2), unit: "us",
                target: "ratio <= 1.5", met: median(pgbench.2) <= 1.5 * median(sqlite.putCPU),
                peer: "\(ClusterSetup.sqlite): CPU per PUT", peerValue: median(sqlite.putCPU),
                ratio: median(pgbench.2) / median(sqlite.putCPU)),
        ]
}

/// WAL segments (16 MB each) the PostgreSQL setups write in one `make bench-cluster`, and some.
let walSegments = 56

/// Has a fresh server make `segments` WAL files and recycle them, as a server in service has
/// them: a checkpoint renames the files behind it for the WAL to come. A fresh server writes a
/// new 16 MB file of zeros each time its WAL reaches the next one (`wal_init_zero`), and the
/// commit that crosses there waits for it: a fan-out run it falls in stands out from the others,
/// and with the files recycled none does.
func recycleWAL(_ server: PostgresServer, segments: Int) async throws {
    try await server.psql("ALTER SYSTEM SET min_wal_size = '\((segments + 4) * 16)MB'")
    try await server.psql("SELECT pg_reload_conf()")
    try await server.psql("CREATE TABLE wal_files (n int)")
    for n in 0..<segments { try await server.psql("INSERT INTO wal_files VALUES (\(n)); SELECT pg_switch_wal()") }
    try await server.psql("DROP TABLE wal_files")
    try await server.psql("CHECKPOINT")
}

/// `--only pgbench`: the peer alone, on a server of its own: what PostgreSQL takes on this
/// machine, without the nodes' runs before it.
func pgbenchBench(runs: Int, seconds: Int) async throws -> [BenchRow] {
    try await PostgresServer.with { server in
        try await recycleWAL(server, segments: walSegments)
        return try await PgbenchPeer.measure(server: server, runs: runs, seconds: seconds)
    }.rows
}

enum ClusterSetup {
    static let sqlite = "1 node, SQLite"
    static let solo = "1 node, PostgreSQL"
    static let three = "3 nodes, PostgreSQL, nginx"
    static let apart = "3 nodes, a database each, nginx (no coordination)"
    static let pgbenchSingle = "pgbench single-row upsert, 32 clients"
}

/// One measure of the cluster rows: its name, unit, and which way is better.
enum ClusterMetric: CaseIterable {
    case ingest, sends, fanout

    var scenario: String {
        switch self {
        case .ingest: "cluster ingest (10k PUT installation, 32 conns)"
        case .sends: "cluster durable sends (10k, 32 conns)"
        case .fanout: "cluster fan-out 1 send -> 500 streams, last device"
        }
    }

    var unit: String {
        switch self {
        case .ingest: "requests/s"
        case .sends: "sends/s"
        case .fanout: "ms"
        }
    }

    var higherIsBetter: Bool { self != .fanout }

    /// This measure's runs in `figures`.
    func runs(_ figures: ClusterFigures) -> [Double] {
        switch self {
        case .ingest: figures.ingest
        case .sends: figures.sends
        case .fanout: figures.fanoutLast
        }
    }

    /// The slowest run over the median: median / lowest for a rate, highest / median for a
    /// time (1 when every run was alike).
    func spread(_ runs: [Double]) -> Double {
        guard let low = runs.min(), let high = runs.max() else { return .nan }
        return higherIsBetter ? median(runs) / low : high / median(runs)
    }

    var spreadWording: String { higherIsBetter ? "median / slowest run" : "slowest run / median" }
}

/// The rows: medians with their targets, the spreads, and pgbench.
func clusterRows(
    sqlite: ClusterFigures, solo: ClusterFigures, three: ClusterFigures, apart: ClusterFigures, pgbench: PgbenchPeer
) -> [BenchRow] {
    /// A median against a peer's: `factor` × the peer's at least (a rate) or at most (a time).
    func judged(_ metric: ClusterMetric, _ setup: String, _ value: Double, peer: String, _ peerValue: Double, factor: Double)
        -> BenchRow
    {
        BenchRow(
            scenario: "\(metric.scenario): \(setup)", value: value, unit: metric.unit,
            target: "ratio \(metric.higherIsBetter ? ">=" : "<=") \(factor)",
            met: metric.higherIsBetter ? value >= factor * peerValue : value <= factor * peerValue, peer: peer,
            peerValue: peerValue, ratio: value / peerValue)
    }
    var rows: [BenchRow] = []
    let ingest = ClusterMetric.ingest
    let sends = ClusterMetric.sends
    let fanout = ClusterMetric.fanout
    for metric in ClusterMetric.allCases {
        rows.append(
            BenchRow(
                scenario: "\(metric.scenario): \(ClusterSetup.sqlite)", value: median(metric.runs(sqlite)),
                unit: metric.unit, target: "(reported)", met: true))
    }
    let pgbenchSingle = median(pgbench.singleRow)
    rows += [
        judged(ingest, ClusterSetup.solo, median(solo.ingest), peer: ClusterSetup.sqlite, median(sqlite.ingest), factor: 0.7),
        judged(
            ingest, ClusterSetup.solo + " (against pgbench)", median(solo.ingest), peer: ClusterSetup.pgbenchSingle,
            pgbenchSingle, factor: 0.5),
        judged(sends, ClusterSetup.solo, median(solo.sends), peer: ClusterSetup.sqlite, median(sqlite.sends), factor: 0.8),
        judged(
            fanout, ClusterSetup.solo, median(solo.fanoutLast), peer: ClusterSetup.sqlite, median(sqlite.fanoutLast),
            factor: 1.5),
        judged(ingest, ClusterSetup.three, median(three.ingest), peer: ClusterSetup.solo, median(solo.ingest), factor: 0.7),
        judged(sends, ClusterSetup.three, median(three.sends), peer: ClusterSetup.solo, median(solo.sends), factor: 0.7),
        judged(
            fanout, ClusterSetup.three, median(three.fanoutLast), peer: ClusterSetup.solo, median(solo.fanoutLast),
            factor: 1.43),
    ]
    // The hubs' CPU per PUT (every node's, user and system), against the SQLite node's.
    let cpu = "cluster hub CPU per PUT installation (all nodes)"
    rows.append(
        BenchRow(
            scenario: "\(cpu): \(ClusterSetup.sqlite)", value: median(sqlite.putCPU), unit: "us", target: "(reported)", met: true)
    )
    for (setup, figures) in [(ClusterSetup.solo, solo), (ClusterSetup.three, three), (ClusterSetup.apart, apart)] {
        rows.append(
            BenchRow(
                scenario: "\(cpu): \(setup)", value: median(figures.putCPU), unit: "us", target: "(reported)", met: true,
                peer: ClusterSetup.sqlite, peerValue: median(sqlite.putCPU), ratio: median(figures.putCPU) / median(sqlite.putCPU)
            ))
    }
    // Three coordinated nodes against three that share nothing, in the same run.
    for metric in [ingest, sends] {
        let value = median(metric.runs(three))
        let peer = median(metric.runs(apart))
        rows.append(
            BenchRow(
                scenario: "\(metric.scenario): \(ClusterSetup.three) (against a database each)", value: value,
                unit: metric.unit, target: "ratio >= 0.8", met: value >= 0.8 * peer, peer: ClusterSetup.apart,
                peerValue: peer, ratio: value / peer))
    }
    // The ceiling without coordination, against the same peer as the three nodes' rows.
    for metric in [ingest, sends] {
        rows.append(
            BenchRow(
                scenario: "\(metric.scenario): \(ClusterSetup.apart)", value: median(metric.runs(apart)), unit: metric.unit,
                target: "(reported)", met: true, peer: ClusterSetup.solo, peerValue: median(metric.runs(solo)),
                ratio: median(metric.runs(apart)) / median(metric.runs(solo))))
    }
    for metric in ClusterMetric.allCases {
        let base = metric.spread(metric.runs(sqlite))
        let count = metric.runs(sqlite).count
        let name = "\(metric.scenario), spread (\(metric.spreadWording) of \(count))"
        rows.append(
            BenchRow(scenario: "\(name): \(ClusterSetup.sqlite)", value: base, unit: "x", target: "(reported)", met: true))
        for (setup, figures) in [(ClusterSetup.solo, solo), (ClusterSetup.three, three)] {
            let spread = metric.spread(metric.runs(figures))
            rows.append(
                BenchRow(
                    scenario: "\(name): \(setup)", value: spread, unit: "x", target: "ratio <= 1.0", met: spread <= base,
                    peer: ClusterSetup.sqlite, peerValue: base, ratio: spread / base))
        }
    }
    return rows + pgbench.rows
}

/// One setup's runs.
struct ClusterFigures {
    var ingest: [Double] = []
    /// The hubs' CPU time per PUT of the ingest run, in microseconds (all nodes together).
    var putCPU: [Double] = []
    var sends: [Double] = []
    var fanoutLast: [Double] = []
}

/// - Parameter fanout: measure the fan-out too (it needs every node to see every send).
func clusterFigures(
    _ hub: BenchHub, setup: String, loadgen: String, fanoutClient: String, runs: Int, fanout: Bool = true,
    processes: [BenchHub]
) async throws -> ClusterFigures {
    var figures = ClusterFigures()
    for run in 0..<runs {
        let cpuBefore = processes.map(cpuSeconds).reduce(0, +)
        let put = try load(
            loadgen, port: hub.port, template: scripts.appendingPathComponent("put-installation.http"),
            token: hub.token(hub.listen), total: 10_000, expect: 200, prefix: "c\(run)")
        let send = try load(
            loadgen, port: hub.port, template: scripts.appendingPathComponent("send-template.http"),
            token: hub.token(hub.full), total: 10_000, expect: 201, prefix: "cs\(run)")
        if put.bad + send.bad > 0 { throw BenchError(description: "\(put.bad + send.bad) requests failed on \(hub.url)") }
        figures.ingest.append(put.rate)
        // Read after the nodes settle: followers apply what the others wrote after it answered.
        try await Task.sleep(for: .seconds(2))
        figures.putCPU.append((processes.map(cpuSeconds).reduce(0, +) - cpuBefore) / 10_000 * 1e6)
        figures.sends.append(send.rate)
        var fanned: [Double] = []
        if fanout {
            let subscribers = 500
            let tag = "Cluster\(run)"
            try await register(hub: hub, tag: tag, first: run * subscribers, count: subscribers)
            let marker = "bench-marker-\(UUID().uuidString)"
            fanned = try runFanout(
                fanoutClient, port: hub.port, subscribePath: "/_sandbox/apns/breakingnews/devices/%064x/stream",
                subscribers: subscribers, header: "Authorization: \(hub.token(hub.listen))",
                publishPath: "/breakingnews/messages?api-version=2015-01",
                publishHeaders:
                    "Authorization: \(hub.token(hub.full))\r\nServiceBusNotification-Format: template\r\nServiceBusNotification-Tags: \(tag)\r\nContent-Type: application/json\r\n",
                body: "{\"messageParam\":\"\(marker)\"}", marker: marker, first: run * subscribers, rounds: 1
            ).map(\.last)
        }
        figures.fanoutLast += fanned
        let cpu = Int(figures.putCPU.last ?? 0)
        let fannedText = fanned.map { String(format: "%.1f", $0) }.joined(separator: ", ")
        let fanoutText = fanout ? ", fan-out last \(fannedText) ms" : ""
        log(
            "cluster \(setup) (\(hub.url)) run \(run + 1): ingest \(Int(put.rate)) req/s (\(cpu) us of hub CPU a PUT), "
                + "sends \(Int(send.rate))/s\(fanoutText)")
    }
    for metric in ClusterMetric.allCases where fanout || metric != .fanout {
        let values = metric.runs(figures)
        log(
            "cluster \(setup): \(metric.scenario): runs "
                + values.map { String(format: "%.1f", $0) }.joined(separator: ", ")
                + "; median \(String(format: "%.1f", median(values))) \(metric.unit), spread "
                + String(format: "%.2f", metric.spread(values)))
    }
    return figures
}

/// The CPU time a hub process has used so far, user and system, in seconds (`/proc/PID/stat`).
func cpuSeconds(_ hub: BenchHub) -> Double {
    guard let pid = hub.process?.processIdentifier,
        let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return 0 }
    // After the command name (in brackets, which may hold spaces): state is field 3, utime 14, stime 15.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// What a follower pays to apply a row another node wrote: two nodes on one new database,
/// 10,000 PUTs to the first alone; the second's CPU over the run and two seconds after, less
/// what it spends idle for as long (its polls), per PUT, in microseconds. One figure a run.
func followerApplyCPU(database: PostgresServer, loadgen: String, runs: Int) async throws -> [Double] {
    let url = try await database.createDatabase()
    let writer = try await BenchHub.start(
        binary: binary, directory: output.appendingPathComponent("cluster-writer"),
        arguments: ["--store", url, "--node", "writer"])
    defer { writer.stop() }
    let follower = try await BenchHub.start(
        binary: binary, directory: output.appendingPathComponent("cluster-follower"),
        arguments: ["--store", url, "--node", "follower"])
    defer { follower.stop() }
    var figures: [Double] = []
    for run in 0..<runs {
        let idleStart = (cpuSeconds(follower), ContinuousClock.now)
        try await Task.sleep(for: .seconds(2))
        let idlePerSecond = (cpuSeconds(follower) - idleStart.0) / (ContinuousClock.now - idleStart.1).seconds
        let (before, started) = (cpuSeconds(follower), ContinuousClock.now)
        let put = try load(
            loadgen, port: writer.port, template: scripts.appendingPathComponent("put-installation.http"),
            token: writer.token(writer.listen), total: 10_000, expect: 200, prefix: "f\(run)")
        if put.bad > 0 { throw BenchError(description: "\(put.bad) PUTs failed on the writer") }
        try await Task.sleep(for: .seconds(2))
        let spent = cpuSeconds(follower) - before - idlePerSecond * (ContinuousClock.now - started).seconds
        figures.append(max(0, spent) / 10_000 * 1e6)
        log("cluster follower run \(run + 1): \(Int(figures.last ?? 0)) us of its CPU to apply each PUT the writer took")
    }
    return figures
}
