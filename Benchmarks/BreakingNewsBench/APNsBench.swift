import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import LocalHub
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// 2. APNs sends per second (issue 14: at least 5,000/s on one connection): the hub's
/// `APNsClient` (provider token, stream limit, retry logic) sending alerts over HTTP/2 with
/// TLS, `inFlight` sends at a time, stopping after `total` sends or `seconds`, to two
/// loopback peers in turn: nginx (C, one worker, up to 1,000 streams as APNs allows), which
/// leaves the most of the two cores to the client, and a Hummingbird peer that counts what
/// it sees (every request HTTP/2, the client's connection the only one it made); each run on
/// nginx has an nginx of its own (see below). Every
/// answer must be a delivery. The reference, for each peer: a bare AsyncHTTPClient POST loop
/// (a fixed bearer token, no stream limit, no retry logic) on a connection of its own, runs
/// alternating with the client's. Medians of `runs`.
func apnsSends(total: Int, inFlight: Int, seconds: Double, runs: Int) async throws -> [BenchRow] {
    let folder = output.appendingPathComponent("apns-nginx")
    try? FileManager.default.removeItem(at: folder)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    _ = try SelfSignedCertificate.serverConfiguration(in: folder)
    let certificate = folder.appendingPathComponent(SelfSignedCertificate.certificateFile).path
    // A fresh nginx (and so a fresh connection) for each run: nginx slows down the more streams
    // one worker has carried (its share of the CPU more than doubled over 120,000 streams, for
    // both clients' connections alike), which would charge the peer's slowdown to the client.
    var viaNginx: APNsMeasured?
    for run in 1...runs {
        guard let (process, port) = try startAPNsNginx(in: folder) else { break }
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let measured = try await measureAPNs(
            url: "https://127.0.0.1:\(port)", caFile: certificate, total: total, inFlight: inFlight, seconds: seconds,
            runs: 1, firstRun: run, peer: nil)
        viaNginx = APNsMeasured(
            client: (viaNginx?.client ?? []) + measured.client, bare: (viaNginx?.bare ?? []) + measured.bare)
    }
    let peer = ThroughputPeer(folder: output.appendingPathComponent("apns-peer"))
    let counted = try await peer.serve { url in
        try await measureAPNs(
            url: url, caFile: peer.certificateFile, total: total, inFlight: inFlight, seconds: seconds, runs: runs, peer: peer)
    }
    // The one-connection check is the counting peer's; the target is judged on nginx, the
    // peer that takes the least of the cores the client needs.
    let nginxRows = viaNginx?.rows(peerName: "nginx 1.22 h2 peer", judged: true, oneConnection: counted.oneConnection) ?? []
    return nginxRows
        + counted.rows(peerName: "Hummingbird h2 peer", judged: viaNginx == nil, oneConnection: counted.oneConnection)
}

/// nginx answering `POST /3/device/…` with 200 over HTTP/2 and TLS, on a port of its own.
func startAPNsNginx(in folder: URL) throws -> (Process, Int)? {
    try startNginx(module: "ngx_http_echo_module.so", in: folder, missing: "the APNs row uses the Swift peer only") {
        port, folder in
        """
        worker_processes 1;
        pid \(folder.path)/nginx.pid;
        error_log \(folder.path)/error.log warn;
        events { worker_connections 1024; }
        http {
          access_log off;
          # One connection for the whole run, as APNs keeps it (nginx's default closes one
          # after 1,000 requests).
          server {
            listen 127.0.0.1:\(port) ssl http2;
            ssl_certificate \(folder.appendingPathComponent(SelfSignedCertificate.certificateFile).path);
            ssl_certificate_key \(folder.appendingPathComponent(SelfSignedCertificate.keyFile).path);
            http2_max_concurrent_streams 1000;
            keepalive_requests 100000000;
            keepalive_timeout 600s;
            # The body is read (a 'return' leaves it unread, and the connection's flow-control
            # window then fills up and stalls every stream).
            location /3/device/ {
              add_header apns-id 1f3c6a64-5b52-4c4d-9c0e-7e0c3b1a2d4e;
              echo_read_request_body;
              echo -n "";
            }
          }
        }
        """
    }
}

/// Starts nginx with `module` loaded and the configuration `config` writes for a free port
/// and `folder` (below Linux's ephemeral range, 32768-60999, where the clients' own ports
/// could take it); nil, saying what is `missing`, when nginx or the module is not installed.
func startNginx(
    module: String, in folder: URL, missing: String, config: (_ port: Int, _ folder: URL) -> String
) throws -> (Process, Int)? {
    let modulePath = "/usr/lib/nginx/modules/\(module)"
    guard let nginx = which("nginx"), FileManager.default.fileExists(atPath: modulePath) else {
        log("nginx with \(module) is not installed; \(missing)")
        return nil
    }
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let port = 20_000 + Int.random(in: 0..<10_000)
    let file = folder.appendingPathComponent("nginx.conf")
    try Data(("load_module \(modulePath);\n" + config(port, folder)).utf8).write(to: file)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: nginx)
    process.arguments = ["-p", folder.path, "-c", file.path, "-g", "daemon off;"]
    process.standardError = FileHandle.nullDevice
    try process.run()
    keepTrack(of: process)
    guard waitForListener(port: port, seconds: 5) else {
        process.terminate()
        process.waitUntilExit()
        throw BenchError(description: "nginx did not start listening on port \(port); see \(folder.path)/error.log")
    }
    return (process, port)
}

/// One peer's runs: the client's and the bare loop's.
struct APNsMeasured {
    var client: [Driven] = []
    var bare: [Driven] = []
    var oneConnection = true

    func rows(peerName: String, judged: Bool, oneConnection: Bool) -> [BenchRow] {
        let rate = median(client.map(\.rate))
        let peerRate = median(bare.map(\.rate))
        let reference = "bare AsyncHTTPClient POST, \(peerName)"
        func latency(_ name: String, _ value: (Driven) -> Double) -> BenchRow {
            let ours = median(client.map(value))
            let theirs = median(bare.map(value))
            return BenchRow(
                scenario: "APNs send \(name) to the \(peerName)", value: ours, unit: "ms", target: "(reported)", met: true,
                peer: reference, peerValue: theirs, ratio: ours / theirs)
        }
        return [
            BenchRow(
                scenario: "APNs sends, one HTTP/2 connection (APNsClient -> \(peerName))", value: rate, unit: "sends/s",
                target: judged ? ">= 5000 on 1 connection" : "(reported)",
                met: judged ? rate >= 5000 && oneConnection : true, peer: reference, peerValue: peerRate,
                ratio: rate / peerRate),
            latency("p50", \.p50), latency("p99", \.p99),
        ]
    }
}

/// Drives `APNsClient` and the bare loop against the APNs peer at `url`; with a counting
/// `peer`, checks every request was HTTP/2 and the client kept to one connection.
func measureAPNs(
    url: String, caFile: String, total: Int, inFlight: Int, seconds: Double, runs: Int, firstRun: Int = 1,
    peer: ThroughputPeer?
) async throws -> APNsMeasured {
    let device = String(repeating: "ab", count: 32)
    let alert = Array(#"{"aps":{"alert":"Breaking World News : markets rally"}}"#.utf8)
    let topic = "com.example.news"
    let token = try APNsProviderToken(key: P256.Signing.PrivateKey().pemRepresentation, keyId: "ABC123DEFG", teamId: "DEF123GHIJ")
    let client = try APNsClient(
        PushCredentials.APNs(token: token, topic: topic, endpoint: url, caFile: caFile), maximumStreams: inFlight)
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.additionalTrustRoots = [.file(caFile)]
    var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
    configuration.httpVersion = .automatic
    let bare = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    var request = HTTPClientRequest(url: "\(url)/3/device/\(device)")
    request.method = .POST
    request.headers.add(name: "authorization", value: "bearer \(token.token())")
    request.headers.add(name: "apns-topic", value: topic)
    request.headers.add(name: "apns-push-type", value: "alert")
    request.headers.add(name: "content-type", value: "application/json")
    request.body = .bytes(ByteBuffer(bytes: alert))
    let bareRequest = request
    let viaClient: @Sendable () async -> String? = {
        let answer = await client.send(device: device, payload: alert, headers: [:])
        if case .delivered = answer { return nil }
        return "\(answer)"
    }
    let viaBare: @Sendable () async -> String? = {
        do {
            let response = try await bare.execute(bareRequest, timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 64 << 10)
            return response.status == .ok ? nil : "HTTP \(response.status.code)"
        } catch {
            return String(describing: error).prefix(200).description
        }
    }
    do {
        // One send alone first, so that the connection is up (and known to be HTTP/2) before
        // a burst could make the pool open others; then a warm-up burst.
        var connections: [Int] = []
        for send in [viaClient, viaBare] {
            try await drive(1, inFlight: 1, seconds: seconds, send).check("warm-up")
            try await drive(inFlight, inFlight: inFlight, seconds: seconds, send).check("warm-up")
            connections.append(peer?.counts.connections ?? 0)
        }
        var measured = APNsMeasured()
        for run in firstRun..<(firstRun + runs) {
            for useClient in [true, false] {
                let before = peer?.counts
                let driven = await drive(total, inFlight: inFlight, seconds: seconds, useClient ? viaClient : viaBare)
                try driven.check(useClient ? "APNsClient" : "bare client")
                if let before, let after = peer?.counts {
                    guard after.requests - before.requests == driven.sent, after.http2 - before.http2 == driven.sent else {
                        throw BenchError(
                            description: "the APNs peer saw \(after.requests - before.requests) requests, "
                                + "\(after.http2 - before.http2) of them HTTP/2, for \(driven.sent) sends")
                    }
                }
                if useClient { measured.client.append(driven) } else { measured.bare.append(driven) }
                log(
                    "apns \(url) run \(run), \(useClient ? "APNsClient" : "bare client "): \(driven.sent) sends in "
                        + "\(String(format: "%.2f", driven.seconds)) s = \(formatted(driven.rate))/s, p50 "
                        + "\(String(format: "%.1f", driven.p50)) ms, p99 \(String(format: "%.1f", driven.p99)) ms")
            }
        }
        if let peer {
            let extra = peer.counts.connections - connections[1]
            log(
                "apns: the APNsClient made \(connections[0]) connection(s), the bare client "
                    + "\(connections[1] - connections[0]), \(extra) more during the runs; every request was HTTP/2")
            measured.oneConnection = connections[0] == 1 && extra == 0
        }
        await client.shutdown()
        try? await bare.shutdown()
        return measured
    } catch {
        await client.shutdown()
        try? await bare.shutdown()
        throw error
    }
}

/// What one drive of sends measured.
struct Driven {
    var sent: Int
    var seconds: Double
    /// Latencies of single sends, milliseconds (from the call to the answer, waiting for a
    /// stream included).
    var p50: Double
    var p99: Double
    var failed: Int
    var firstFailure: String?

    var rate: Double { Double(sent) / seconds }

    func check(_ what: String) throws {
        guard failed == 0 else {
            throw BenchError(
                description: "\(what): \(failed) of \(sent) APNs sends failed, the first with \(firstFailure ?? "?")")
        }
    }
}

/// `total` calls of `send` (nil: delivered), `inFlight` at a time (one started as one ends),
/// none started after `seconds`.
func drive(_ total: Int, inFlight: Int, seconds: Double, _ send: @escaping @Sendable () async -> String?) async -> Driven {
    let start = ContinuousClock.now
    let deadline = start + .milliseconds(Int(seconds * 1000))
    var latencies: [Double] = []
    latencies.reserveCapacity(total)
    var failed = 0
    var firstFailure: String?
    await withTaskGroup(of: (Double, String?).self) { group in
        var started = 0
        while started < total, started < inFlight || ContinuousClock.now < deadline {
            if started >= inFlight, let (latency, failure) = await group.next() {
                latencies.append(latency)
                if let failure {
                    failed += 1
                    firstFailure = firstFailure ?? failure
                }
            }
            started += 1
            group.addTask {
                let began = ContinuousClock.now
                let failure = await send()
                return ((ContinuousClock.now - began).seconds * 1000, failure)
            }
        }
        for await (latency, failure) in group {
            latencies.append(latency)
            if let failure {
                failed += 1
                firstFailure = firstFailure ?? failure
            }
        }
    }
    let elapsed = (ContinuousClock.now - start).seconds
    latencies.sort()
    func percentile(_ p: Double) -> Double {
        latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
    }
    return Driven(
        sent: latencies.count, seconds: elapsed, p50: percentile(0.5), p99: percentile(0.99), failed: failed,
        firstFailure: firstFailure)
}

/// APNs on loopback for throughput: HTTP/2 over TLS (a self-signed certificate made in
/// `folder`), `POST /3/device/<token>` answered 200 with an `apns-id` when a bearer token
/// is present (not verified: the tests' peer does that). Counts requests, those spoken over
/// HTTP/2 (their `:scheme` is `https`; HTTP/1.1 requests read `http` here) and connections.
final class ThroughputPeer: Sendable {
    struct Counts {
        var requests = 0
        var http2 = 0
        var connections = 0
    }

    private let folder: URL
    private let counted = Mutex(Counts())

    init(folder: URL) { self.folder = folder }

    var counts: Counts { counted.withLock { $0 } }

    /// The certificate clients must trust.
    var certificateFile: String { folder.appendingPathComponent(SelfSignedCertificate.certificateFile).path }

    /// Serves while `body` runs, given the base URL (`https://127.0.0.1:PORT`); then stops.
    func serve<T: Sendable>(_ body: @Sendable (String) async throws -> T) async throws -> T {
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let tls = try SelfSignedCertificate.serverConfiguration(in: folder)
        let apnsId = HTTPField.Name("apns-id")!
        let router = Router()
        router.post("/3/device/:token") { request, _ -> Response in
            let authorised = request.headers[.authorization]?.hasPrefix("bearer ") == true
            self.counted.withLock {
                $0.requests += 1
                if request.head.scheme == "https" { $0.http2 += 1 }
            }
            _ = try await request.body.collect(upTo: 8192)
            guard authorised else { return Response(status: .forbidden) }
            var fields = HTTPFields()
            fields[apnsId] = UUID().uuidString
            return Response(status: .ok, headers: fields)
        }
        let server = HTTPServerBuilder { responder in
            CountingChildChannel(base: try HTTP2UpgradeChannel(tlsConfiguration: tls, responder: responder)) {
                self.counted.withLock { $0.connections += 1 }
            }
        }
        let (ready, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "apns-peer")
        logger.logLevel = .critical
        let app = Application(
            router: router, server: server,
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), backlog: 64),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let task = Task { try await app.run() }
        // Stopped (its port closed) before the next scenario starts.
        func stop() async {
            task.cancel()
            _ = await task.result
        }
        var iterator = ready.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            await stop()
            throw BenchError(description: "the APNs peer did not start")
        }
        do {
            let result = try await body("https://127.0.0.1:\(port)")
            await stop()
            return result
        } catch {
            await stop()
            throw error
        }
    }
}

/// A server's child channel, counting the connections it sets up.
struct CountingChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    let base: Base
    let accepted: @Sendable () -> Void

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Base.Value> {
        accepted()
        return base.setup(channel: channel, logger: logger)
    }

    func handle(value: Base.Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
