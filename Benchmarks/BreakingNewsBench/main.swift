import Foundation
import Hummingbird
import Logging
import NotificationHubs

// `make bench`: every scenario on loopback, medians of several runs, peers measured in
// the same run. Prints a table and writes .build/bench/results.json.

let arguments = CommandLine.arguments
let quick = arguments.contains("--quick")
let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
let binDirectory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
let binary = binDirectory.appendingPathComponent("breaking-news").path
let scripts = root.appendingPathComponent("Benchmarks/scripts")
let output = root.appendingPathComponent(".build/bench")
let fanoutClient = output.appendingPathComponent("fanout").path
let loadgen = output.appendingPathComponent("loadgen").path
let runs = quick ? 2 : 5
/// `--only match,apns,webpush,retention,ingest,fanout,sends,terminal,reconnect,cluster` runs a subset
/// (for profiling); `cluster` runs only when named, and `pgbench` (the cluster's peer alone).
let only: Set<String>? = arguments.firstIndex(of: "--only").map { Set(arguments[$0 + 1].split(separator: ",").map(String.init)) }
func wanted(_ name: String) -> Bool { only?.contains(name) ?? true }
/// `--fanout-rounds N` (1–100) publishes N times on each run's streams (profiling the
/// publishes; the fan-out rows then count every publish as a run).
let fanoutRounds = min(100, max(1, arguments.firstIndex(of: "--fanout-rounds").flatMap { Int(arguments[$0 + 1]) } ?? 1))
/// `--cluster-runs N` (1–20): runs per cluster setup and of pgbench (3 by default, 1 with
/// `--quick`; `make bench-cluster` asks for 5).
let clusterRuns = min(
    20, max(1, arguments.firstIndex(of: "--cluster-runs").flatMap { Int(arguments[$0 + 1]) } ?? (quick ? 1 : 3)))
/// `--pgbench-seconds N` (1–300): how long each pgbench run of the cluster scenario lasts.
let pgbenchSeconds = min(
    300, max(1, arguments.firstIndex(of: "--pgbench-seconds").flatMap { Int(arguments[$0 + 1]) } ?? (quick ? 3 : 10)))

/// A bare Hummingbird route answering 200 to everything: the framework's own ceiling.
struct BareResponder: HTTPResponder {
    typealias Context = BasicRequestContext
    func respond(to request: Request, context: Context) async throws -> Response {
        _ = try await request.body.collect(upTo: 1 << 20)
        return Response(status: .ok)
    }
}

func startBareServer() async throws -> (Task<Void, Error>, Int) {
    let (ready, continuation) = AsyncStream<Int>.makeStream()
    var logger = Logger(label: "bare")
    logger.logLevel = .error
    let app = Application(
        responder: BareResponder(),
        configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), backlog: 1024),
        onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
    let task = Task { try await app.run() }
    var iterator = ready.makeAsyncIterator()
    return (task, await iterator.next() ?? 0)
}

func startNchan() throws -> (Process, Int)? {
    try startNginx(
        module: "ngx_nchan_module.so", in: output.appendingPathComponent("nchan"), missing: "the fan-out peer is skipped"
    ) {
        port, directory in
        """
        worker_processes 2;
        pid \(directory.path)/nginx.pid;
        error_log \(directory.path)/error.log warn;
        events { worker_connections 8192; }
        http {
          access_log off;
          server {
            listen 127.0.0.1:\(port);
            location = /sub { nchan_subscriber eventsource; nchan_channel_id world; }
            location = /pub { nchan_publisher; nchan_channel_id world; }
          }
        }
        """
    }
}

func main() async throws {
    try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
    let cluster = only?.contains("cluster") == true
    let tools =
        (wanted("fanout") || cluster ? [fanoutClient] : []) + (wanted("ingest") || wanted("sends") || cluster ? [loadgen] : [])
    for tool in tools where !FileManager.default.isExecutableFile(atPath: tool) {
        throw BenchError(description: "\(tool) is missing (make bench builds it)")
    }
    var rows: [BenchRow] = []

    if wanted("match") {
        log("1/7 match and render")
        rows.append(try await matchAndRender(installations: 100_000, runs: runs))
    }
    if wanted("apns") {
        log("2/7 APNs sends on one connection")
        rows += try await apnsSends(total: 40_000, inFlight: 500, seconds: 15, runs: quick ? 1 : 3)
    }
    if wanted("webpush") {
        log("Web Push: one browser's news beside services that stall")
        rows += try await webPushFairness(runs: quick ? 1 : 3)
    }
    if wanted("retention") {
        log("retention: bytes per delivery, a million deliveries kept and pruned")
        rows += try await retentionBench(binary: binary, postgres: true)
    }
    if cluster {
        log(
            "cluster: one SQLite node, one PostgreSQL node, three PostgreSQL nodes behind nginx, pgbench; "
                + "\(clusterRuns) runs each")
        rows += try await clusterBench(
            loadgen: loadgen, fanoutClient: fanoutClient, runs: clusterRuns, pgbenchSeconds: pgbenchSeconds)
    }
    if only?.contains("pgbench") == true, !cluster {
        log("pgbench alone: \(clusterRuns) runs of each script")
        rows += try await pgbenchBench(runs: clusterRuns, seconds: pgbenchSeconds)
    }
    if only == ["redraw"] {
        rows += LogView.allCases.map { logRedraw(entries: 10_000, runs: 2000, view: $0) }
        rows += editing(runs: 2000)
        printTable(rows)
        return
    }
    guard wanted("ingest") || wanted("fanout") || wanted("sends") || wanted("terminal") || wanted("reconnect") else {
        finish(rows)
        return
    }

    let hub = try await BenchHub.start(binary: binary, directory: output.appendingPathComponent("hub"))
    defer { hub.stop() }
    let (bareTask, barePort) = try await startBareServer()
    defer { bareTask.cancel() }

    if wanted("ingest") {
        log("3/7 registration ingest")
        rows += try registrationIngest(
            loadgen: loadgen, hub: hub, barePort: barePort, scripts: scripts, total: 20_000, runs: quick ? 1 : 3)
    }

    let nchan = wanted("fanout") ? try startNchan() : nil
    defer {
        if let (process, _) = nchan {
            process.terminate()
            process.waitUntilExit()
            forget(process)
        }
    }
    if wanted("fanout") {
        log("4/7 fan-out")
        rows += try await fanout(
            client: fanoutClient, hub: hub, nchanPort: nchan?.1, subscribers: 1000, runs: runs, rounds: fanoutRounds)
    }
    if wanted("sends") {
        log("5/7 durable sends")
        rows.append(try durableSends(loadgen: loadgen, hub: hub, scripts: scripts, total: 20_000, runs: quick ? 1 : 3))
    }
    if wanted("terminal") {
        log("6/7 terminal")
        try terminal(&rows, hub: hub)
        rows.append(try await hubStartedWithR(binary: binary, runs: runs))
    }
    if wanted("reconnect") {
        log("7/7 reconnect")
        rows.append(try await reconnect(binary: binary, runs: runs))
    }
    finish(rows)
}

func terminal(_ rows: inout [BenchRow], hub: BenchHub) throws {
    let home = output.appendingPathComponent("home")
    try? FileManager.default.removeItem(at: home)
    var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BREAKING_NEWS_") }
    environment["BREAKING_NEWS_HOME"] = home.path
    environment["BREAKING_NEWS_CONNECTION_STRING"] = hub.full.description
    rows += try terminalLaunch(binary: binary, environment: environment, runs: runs)
    rows += LogView.allCases.map { logRedraw(entries: 10_000, runs: 200, view: $0) }
    rows += editing(runs: 200)
}

func finish(_ rows: [BenchRow]) {
    print("")
    printTable(rows)
    let json = "[\n" + rows.map { "  " + $0.json }.joined(separator: ",\n") + "\n]\n"
    do {
        try Data(json.utf8).write(to: output.appendingPathComponent("results.json"))
        print("\nwritten to .build/bench/results.json")
    } catch {
        log("cannot write results.json: \(error)")
    }
}

stopChildrenOnSignals()
do {
    try await main()
} catch {
    log("failed: \(error)")
    exit(1)
}
