import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs

/// `--only cluster`: ingest, durable sends and fan-out on the single SQLite node, on one node
/// on PostgreSQL, and on three nodes on PostgreSQL behind nginx, in the same run. The
/// database and nginx are real servers started here (the tests' own helpers), stopped after.
/// The SQLite node is the peer: the rows give each figure against it.
func clusterBench(loadgen: String, fanoutClient: String, runs: Int) async throws -> [BenchRow] {
    var measured: [(setup: String, figures: ClusterFigures)] = []
    let sqlite = try await BenchHub.start(binary: binary, directory: output.appendingPathComponent("cluster-sqlite"))
    measured.append(
        ("1 node, SQLite", try await clusterFigures(sqlite, loadgen: loadgen, fanoutClient: fanoutClient, runs: runs)))
    sqlite.stop()
    try await PostgresServer.with { database in
        let solo = try await BenchHub.start(
            binary: binary, directory: output.appendingPathComponent("cluster-pg1"),
            arguments: ["--store", try await database.createDatabase(), "--node", "solo"])
        measured.append(
            ("1 node, PostgreSQL", try await clusterFigures(solo, loadgen: loadgen, fanoutClient: fanoutClient, runs: runs)))
        solo.stop()
        let url = try await database.createDatabase()
        var nodes: [BenchHub] = []
        defer { for node in nodes { node.stop() } }
        for n in 1...3 {
            nodes.append(
                try await BenchHub.start(
                    binary: binary, directory: output.appendingPathComponent("cluster-node\(n)"),
                    arguments: ["--store", url, "--node", "node\(n)", "--trusted-proxy", "127.0.0.1"]))
        }
        try await NginxFront.with(upstreams: nodes.map(\.port)) { front in
            let viaFront = try nodes[0].behind(url: front.url, port: front.port)
            measured.append(
                (
                    "3 nodes, PostgreSQL, nginx",
                    try await clusterFigures(viaFront, loadgen: loadgen, fanoutClient: fanoutClient, runs: runs)
                ))
        }
    }
    let base = measured[0].figures
    var rows: [BenchRow] = []
    for (setup, figures) in measured {
        let peer = setup == measured[0].setup ? nil : "1 node, SQLite"
        rows.append(
            BenchRow(
                scenario: "cluster ingest (10k PUT installation, 32 conns): \(setup)", value: figures.ingest,
                unit: "requests/s", target: "(reported)", met: true, peer: peer, peerValue: peer.map { _ in base.ingest },
                ratio: peer.map { _ in figures.ingest / base.ingest }))
        rows.append(
            BenchRow(
                scenario: "cluster durable sends (10k, 32 conns): \(setup)", value: figures.sends, unit: "sends/s",
                target: "(reported)", met: true, peer: peer, peerValue: peer.map { _ in base.sends },
                ratio: peer.map { _ in figures.sends / base.sends }))
        rows.append(
            BenchRow(
                scenario: "cluster fan-out 1 send -> 500 streams, last device: \(setup)", value: figures.fanoutLast,
                unit: "ms", target: "(reported)", met: true, peer: peer, peerValue: peer.map { _ in base.fanoutLast },
                ratio: peer.map { _ in figures.fanoutLast / base.fanoutLast }))
    }
    return rows
}

/// Medians of one setup's runs.
struct ClusterFigures {
    var ingest: Double
    var sends: Double
    var fanoutLast: Double
}

func clusterFigures(_ hub: BenchHub, loadgen: String, fanoutClient: String, runs: Int) async throws -> ClusterFigures {
    var ingest: [Double] = []
    var sends: [Double] = []
    var fanoutLast: [Double] = []
    for run in 0..<runs {
        let put = try load(
            loadgen, port: hub.port, template: scripts.appendingPathComponent("put-installation.http"),
            token: hub.token(hub.listen), total: 10_000, expect: 200, prefix: "c\(run)")
        let send = try load(
            loadgen, port: hub.port, template: scripts.appendingPathComponent("send-template.http"),
            token: hub.token(hub.full), total: 10_000, expect: 201, prefix: "cs\(run)")
        if put.bad + send.bad > 0 { throw BenchError(description: "\(put.bad + send.bad) requests failed on \(hub.url)") }
        ingest.append(put.rate)
        sends.append(send.rate)
        let subscribers = 500
        let tag = "Cluster\(run)"
        try await register(hub: hub, tag: tag, first: run * subscribers, count: subscribers)
        let marker = "bench-marker-\(UUID().uuidString)"
        let fanned = try runFanout(
            fanoutClient, port: hub.port, subscribePath: "/_sandbox/apns/breakingnews/devices/%064x/stream",
            subscribers: subscribers, header: "Authorization: \(hub.token(hub.listen))",
            publishPath: "/breakingnews/messages?api-version=2015-01",
            publishHeaders:
                "Authorization: \(hub.token(hub.full))\r\nServiceBusNotification-Format: template\r\nServiceBusNotification-Tags: \(tag)\r\nContent-Type: application/json\r\n",
            body: "{\"messageParam\":\"\(marker)\"}", marker: marker, first: run * subscribers, rounds: 1)
        fanoutLast += fanned.map(\.last)
        log(
            "cluster \(hub.url) run \(run + 1): ingest \(Int(put.rate)) req/s, sends \(Int(send.rate))/s, fan-out last "
                + fanned.map { String(format: "%.1f", $0.last) }.joined(separator: ", ") + " ms")
    }
    return ClusterFigures(ingest: median(ingest), sends: median(sends), fanoutLast: median(fanoutLast))
}
