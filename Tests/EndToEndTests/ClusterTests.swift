import AsyncHTTPClient
import Foundation
import HubTestSupport
import LocalHubSupport
import NIOCore
import NotificationHubs
import Synchronization
import TestTiers
import Testing

/// Hub nodes sharing one PostgreSQL database, behind nginx: every acknowledged send reaches
/// every device it is for exactly once, through a node's SIGKILL and a database outage.
@Suite(.tags(.live, .postgres), .fullSuiteOnly, .serialized) struct ClusterTests {
    @Test(.timeLimit(.minutes(8))) func threeNodesBehindNginxDeliverEveryAcknowledgedSendOnceThroughAKill() async throws {
        let began = ContinuousClock.now
        let environment = ProcessInfo.processInfo.environment
        let deviceCount = environment["CLUSTER_DEVICES"].flatMap(Int.init) ?? 200
        let senders = environment["CLUSTER_SENDERS"].flatMap(Int.init) ?? 8
        let seconds = environment["CLUSTER_SECONDS"].flatMap(Double.init) ?? 10
        try await Cluster.with(try await PostgresServer.shared(), count: 3) { cluster, front in
            let listen = try cluster.connectionString(front.url, \.listen)
            let full = try cluster.connectionString(front.url, \.full)
            // nginx passes the client's Host on, which the hub checks token audiences against.
            let elsewhere = try token(cluster.connectionString("http://news.example", \.full))
            let answer = try await raw(
                .GET, "\(front.url)/news/installations/none?api-version=2020-06",
                headers: [("Host", "news.example"), ("Authorization", elsewhere)])
            #expect(answer.status == 404, "as news.example through nginx: \(answer.status) \(answer.body)")
            let readers = (0..<deviceCount).map { _ in DeviceReader(tags: Set(categories.filter { _ in Bool.random() })) }
            let log = SendLog()
            try await withStreams(readers, through: front, listen, log, deadline: 90) {
                async let restarted: ContinuousClock.Instant = {
                    try await Task.sleep(nanoseconds: UInt64(seconds / 2 * 1e9))
                    let killed = ContinuousClock.now
                    await cluster.kill(1)
                    try await Task.sleep(nanoseconds: 2_000_000_000)
                    try await cluster.start(1)
                    return killed
                }()
                let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
                await withTaskGroup(of: Void.self) { group in
                    for sender in 0..<senders {
                        group.addTask {
                            for index in 0..<100_000 where ContinuousClock.now < end {
                                let tag = categories.randomElement()!
                                let reply = await log.send(front.url, token(full), tag: tag, "\(tag) \(sender)-\(index)")
                                if reply.status != 201 { try? await Task.sleep(nanoseconds: 50_000_000) }
                            }
                        }
                    }
                }
                // Past the dead node's claims (a 10 s lease), for any delivery repeated.
                return try await restarted + .seconds(15)
            }
            await Verdict(readers: readers, sends: log.all).check(
                "cluster (3 nodes behind nginx, node2 killed and restarted)", since: began, cluster)
        }
    }

    /// Issue 51: the repository's front before two nodes that log in with a password. One
    /// node hangs (SIGSTOP: its port still accepts): the front takes it out after its first
    /// timeout, a send it held is answered 504 (never posted twice), later sends 201 by the
    /// live node, the streams on it move to the live one (a stream silent for three
    /// keep-alives is opened again), and every send answered 201 is delivered once. Then nginx
    /// is reloaded with the streams open: the old worker exits and every stream reconnects
    /// without losing a message.
    @Test(.timeLimit(.minutes(8))) func aHungNodeIsTakenOutByTheFrontAndAReloadLosesNothing() async throws {
        let began = ContinuousClock.now
        try await Cluster.with(try await PostgresServer.shared(), count: 2, passwordRole: true) { cluster, front in
            let listen = try cluster.connectionString(front.url, \.listen)
            let full = try token(cluster.connectionString(front.url, \.full))
            let readers = (0..<6).map { DeviceReader(tags: [categories[$0]]) }
            let log = SendLog()
            let acknowledged = { Verdict(readers: readers, sends: log.all.filter { $0.id != nil }) }
            // And a terminal of its own, subscribed to World through the front, following its log.
            let terminal = Command.freshHome(extra: [
                "BREAKING_NEWS_CONNECTION_STRING": listen.description, "BREAKING_NEWS_HUB": "news",
            ])
            let subscribed = try await terminal.run(["subscribe", "World"])
            try #require(subscribed.status == 0, "\(subscribed.stderr)")
            let follow = try terminal.start(["log", "--follow", "--json"])
            let worldTexts = {
                follow.stdout.split(separator: "\n").compactMap { try? JSONValue(parsing: String($0))["text"]?.stringValue }
            }
            let worldSent = { log.all.filter { $0.id != nil && $0.tag == "World" }.map(\.message) }
            // The terminals' own client: its streams give up on 45 s of silence.
            try await withStreams(readers, through: front, listen, log, deadline: 120, httpClient: HubClient.sharedHTTPClient) {
                for index in 0..<4 {
                    let reply = await log.send(front.url, full, tag: categories[index], "before \(index)")
                    #expect(reply.status == 201, "\(reply)")
                }
                let hung = try #require(cluster.nodes.withLock { $0[0] })
                hung.process.signal(SIGSTOP)
                // Sends, a second apart, until one has waited 10 s: the stopped node holds it.
                let held = Pending()
                var first: [Reply] = []
                try await withThrowingTaskGroup(of: Reply.self) { group in
                    for index in 0..<10 {
                        held.started.withLock { $0[index] = .now }
                        group.addTask {
                            let reply = await log.send(
                                front.url, full, tag: categories[index % 6], "held? \(index)", timeout: .seconds(150))
                            held.started.withLock { $0[index] = nil }
                            return reply
                        }
                        try await Task.sleep(for: .seconds(1))
                        if held.started.withLock({ $0.values.contains { $0 < .now - .seconds(10) } }) { break }
                    }
                    for try await reply in group { first.append(reply) }
                }
                // The held sends waited for the front's read timeout: 504, never posted twice.
                #expect(first.contains { $0.status == 504 }, "no send was held: \(first)")
                #expect(first.allSatisfy { [201, 504].contains($0.status) }, "\(first)")
                // The front has taken the stopped node out: every later send is the live node's.
                for index in first.count..<20 {
                    let reply = await log.send(front.url, full, tag: categories[index % 6], "after \(index)")
                    #expect(reply.status == 201, "a send after the first timeout: \(reply)")
                }
                // The streams that were on the stopped node move: every acknowledged send arrives.
                try await eventually(
                    "every acknowledged send on every device while node1 is stopped", timeout: .seconds(150),
                    every: .milliseconds(500)
                ) { acknowledged().missing.isEmpty }
                #expect(readers.contains { $0.state.withLock(\.reconnects) > 0 }, "no stream moved")
                try await eventually("the terminal to have every World send", timeout: .seconds(150), every: .milliseconds(500)) {
                    Set(worldSent()).isSubset(of: worldTexts())
                }
                hung.process.signal(SIGCONT)

                // A reload with the streams open: the old worker goes, every stream comes back.
                let (old, reconnects) = (front.workers, readers.map { $0.state.withLock(\.reconnects) })
                #expect(!old.isEmpty)
                front.reload()
                for index in 0..<6 {
                    let reply = await log.send(front.url, full, tag: categories[index], "reloaded \(index)")
                    #expect(reply.status == 201, "a send after the reload: \(reply)")
                }
                try await eventually(
                    "the old worker to exit and every stream to reconnect with every send", timeout: .seconds(30),
                    every: .milliseconds(250)
                ) {
                    old.allSatisfy { !LocalProcess.isAlive($0) } && acknowledged().missing.isEmpty
                        && zip(readers, reconnects).allSatisfy { $0.state.withLock(\.reconnects) > $1 }
                        && Set(worldSent()).isSubset(of: worldTexts())
                }
                // The terminal's log: every World send answered 201 once (a held one, all or none).
                let texts = worldTexts()
                for message in worldSent() { #expect(texts.filter { $0 == message }.count == 1, "\(message) in \(texts)") }
                return .now
            }
            await follow.terminate()
            await Verdict(readers: readers, sends: log.all).check(
                "a hung node behind the repository's front, then a reload (2 nodes, a password role)", since: began, cluster)
        }
    }

    /// Behind the front's TLS listener the addresses a node writes (`Content-Location`,
    /// `Location`) are https, as the client used it, from the front's `X-Forwarded-Proto`; a
    /// request that did not come through a proxy cannot claim it.
    @Test(.timeLimit(.minutes(2))) func theFrontsTLSListenerGetsHTTPSAddressesAndADirectClientCannotSayHTTPS() async throws {
        try await Cluster.with(try await PostgresServer.shared(), count: 1) { cluster, front in
            let device = randomDevice()
            let body = #"{"installationId":"\#(device)","platform":"apns","pushChannel":"\#(device)","tags":["World"]}"#
            let url = "\(front.tlsURL)/news/installations/\(device)?api-version=2020-06"
            let headers = front.folder.appendingPathComponent("put-headers")
            let status = try ChildProcess.run(
                [
                    "/usr/bin/curl", "-sS", "--cacert", front.folder.appendingPathComponent("front.pem").path, "-o",
                    "/dev/null", "-D", headers.path, "-X", "PUT", url, "-H",
                    "Authorization: \(try token(cluster.connectionString(front.tlsURL, \.full)))", "-H",
                    "Content-Type: application/json", "--data", body,
                ])
            let answer = try String(contentsOf: headers, encoding: .utf8).lowercased()
            #expect(status == 0 && answer.hasPrefix("http/1.1 200"), "\(answer)")
            #expect(
                answer.contains("content-location: https://127.0.0.1:\(front.tlsPort)/news/installations/\(device)"),
                "\(answer)")
            // Straight to the node, no X-Forwarded-For: the claim of https is not believed.
            let node = try #require(cluster.nodes.withLock { $0[0] })
            let direct = try await raw(
                .PUT, "\(node.state.url)/news/installations/\(device)?api-version=2020-06",
                headers: [
                    ("Authorization", token(node.full)), ("Content-Type", "application/json"), ("X-Forwarded-Proto", "https"),
                ], body: body)
            #expect(direct.status == 200)
            #expect(direct.headers.first(name: "Content-Location")?.hasPrefix("http://127.0.0.1:") == true, "\(direct.headers)")
        }
    }

    @Test(.timeLimit(.minutes(5))) func theDatabaseStoppedForTenSecondsGives503AndLosesNothing() async throws {
        let began = ContinuousClock.now
        try await PostgresServer.with { server in
            try await Cluster.with(server, count: 2) { cluster, front in
                let nodes = cluster.nodes.withLock { $0.compactMap { $0 } }
                let listen = try cluster.connectionString(front.url, \.listen)
                let readers = (0..<6).map { DeviceReader(tags: [categories[$0], categories[($0 + 1) % 6]]) }
                let log = SendLog()
                let outage = Outage()
                try await withStreams(readers, through: front, listen, log, deadline: 60) {
                    for index in 0..<10 {
                        let reply = await log.send(nodes[index % 2], tag: categories[index % 6], "before \(index)")
                        #expect(reply.status == 201, "a send before the outage: \(reply)")
                    }
                    try await server.pause()
                    await withTaskGroup(of: Void.self) { group in
                        for (node, sending) in nodes.flatMap({ [($0, true), ($0, false)] }) {
                            group.addTask { await outage.probe(node, sending, installation: readers[0].device, log) }
                        }
                    }
                    try await server.resume()
                    // Without a restart, each node accepts sends again within 30 s, then keeps accepting them.
                    for (index, node) in nodes.enumerated() {
                        try await eventually(
                            "node\(index + 1) to accept a send within 30 s of the database's return", timeout: .seconds(30),
                            every: .milliseconds(500)
                        ) {
                            await log.send(node, tag: categories[index], "again \(index) \(UUID())").status == 201
                        }
                        for more in 0..<5 {
                            let reply = await log.send(node, tag: categories[more], "after \(index)-\(more)")
                            #expect(reply.status == 201, "a send after the outage: \(reply)")
                        }
                    }
                    return .now
                }
                let violations = outage.state.withLock(\.violations)
                #expect(violations.isEmpty, "\(violations.count) answers not acceptance or a prompt 503: \(violations.prefix(6))")
                await Verdict(readers: readers, sends: log.all).check(
                    "database outage (2 nodes, 10 s), answers during it \(outage.summary)", since: began, cluster)
            }
        }
    }
}

private let categories = ["World", "Politics", "Business", "Technology", "Science", "Sports"]

private func token(_ connectionString: ConnectionString) -> String {
    SharedAccessSignature.make(
        resource: connectionString.hubURL("news"), keyName: connectionString.keyName, key: connectionString.key)
}

/// Hub nodes sharing one database, each on a port it comes back on, logging to `node.log`.
private final class Cluster: Sendable {
    let server: PostgresServer
    /// The database, for the test's superuser.
    let database: String
    /// What the nodes are given: the database for the superuser, or for a role of its own
    /// with its password in `passwordFile`.
    let store: String
    let passwordFile: URL?
    let ports: [Int]
    let folders: [URL]
    let nodes: Mutex<[HubProcess?]>

    private init(server: PostgresServer, database: String, store: String, passwordFile: URL?, count: Int) throws {
        var ports = Set<Int>()
        while ports.count < count { ports.insert(try NginxFront.freePort()) }
        (self.server, self.database, self.store, self.passwordFile) = (server, database, store, passwordFile)
        self.ports = Array(ports)
        folders = (0..<count).map { _ in TestHub.temporaryDirectory() }
        nodes = Mutex(Array(repeating: nil, count: count))
    }

    /// Runs `body` with `count` nodes and nginx in front; stops them, also when it throws.
    /// With `passwordRole`, the nodes log in as a role of their own, asked for its password
    /// (from a file), as on Debian's server.
    static func with(
        _ server: PostgresServer, count: Int, passwordRole: Bool = false, _ body: (Cluster, NginxFront) async throws -> Void
    ) async throws {
        let cluster: Cluster
        if passwordRole {
            let role = "nodes_\(UInt32.random(in: 0...UInt32.max))"
            let store = try await server.addPasswordRole(role, password: "pw_\(role)", database: "\(role)_news")
            let file = TestHub.temporaryDirectory().appendingPathComponent("db-password")
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("pw_\(role)\n".utf8).write(to: file)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
            cluster = try Cluster(
                server: server, database: server.url(database: "\(role)_news"), store: store, passwordFile: file, count: count)
        } else {
            let database = try await server.createDatabase()
            cluster = try Cluster(server: server, database: database, store: database, passwordFile: nil, count: count)
        }
        do {
            for index in 0..<count { try await cluster.start(index) }
            try await NginxFront.with(upstreams: cluster.ports) { try await body(cluster, $0) }
            await cluster.stop()
        } catch {
            await cluster.stop()
            throw error
        }
    }

    func start(_ index: Int) async throws {
        let node = try await HubProcess.start(
            directory: folders[index], port: ports[index],
            arguments: [
                "--store", store, "--node", "node\(index + 1)", "--log-level", "info", "--trusted-proxy", "127.0.0.1",
            ] + (passwordFile.map { ["--store-password-file", $0.path] } ?? []),
            log: folders[index].appendingPathComponent("node.log"))
        nodes.withLock { $0[index] = node }
    }

    func kill(_ index: Int) async { await nodes.withLock { $0[index].take() }?.kill() }

    /// Stops the nodes gracefully, awaited (one running 60 s after SIGTERM is killed, reported).
    func stop() async {
        for node in nodes.withLock({ nodes in nodes.indices.compactMap { nodes[$0].take() } }) {
            let watchdog = Task {
                try await Task.sleep(nanoseconds: 60_000_000_000)
                Issue.record("the node of pid \(node.process.pid) was still running 60 s after SIGTERM")
                node.process.signal(SIGKILL)
            }
            await node.stop()
            watchdog.cancel()
        }
    }

    /// The connection string of a node's `rule`, for the hub at `baseURL`.
    func connectionString(_ baseURL: String, _ rule: KeyPath<HubProcess, ConnectionString>) throws -> ConnectionString {
        let own = try #require(nodes.withLock { $0.compactMap { $0 }.first })[keyPath: rule]
        return try ConnectionString(
            parsing: LocalHubKeyFile.connectionString(baseURL: baseURL, hub: "news", rule: own.keyName, key: own.key))
    }

    /// The nodes' log lines above info, and their takeovers: the last 12 of each.
    var logs: String {
        folders.map { folder in
            let text = (try? String(contentsOf: folder.appendingPathComponent("node.log"), encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n").filter { !$0.contains(" info ") || $0.contains("took over") }
            return "\(folder.path)/node.log:\n" + lines.suffix(12).joined(separator: "\n")
        }.joined(separator: "\n")
    }
}

/// A device's stream, recorded, and after any end or error resumed after its last event id.
private final class DeviceReader: Sendable {
    let device = randomDevice()
    let tags: Set<String>
    let state = Mutex((received: [(id: String, seq: Int64, alert: String?)](), opened: false, reconnects: 0, lastError: ""))
    init(tags: Set<String>) { self.tags = tags.isEmpty ? [categories.randomElement()!] : tags }

    func run(_ client: HubClient) async {  // until cancelled
        for attempt in 0..<10_000 where !Task.isCancelled {
            if attempt > 0 {
                state.withLock { $0.reconnects += 1 }
                try? await Task.sleep(nanoseconds: UInt64.random(in: 200_000_000...500_000_000))
            }
            do {
                let stream = try await client.deviceStream(
                    device: device, after: state.withLock { $0.received.last?.seq }, epoch: nil)
                state.withLock { $0.opened = true }
                for try await batch in stream {
                    let received = batch.deliveries.map { (id: $0.notificationId, seq: $0.seq, alert: $0.alertText) }
                    state.withLock { $0.received += received }
                }
            } catch {
                state.withLock { $0.lastError = "\(error)" }
            }
        }
    }
}

/// Registers the devices, runs `body` once every stream is open (answered 200), waits up to
/// `deadline` s until every send reached its devices, and ends the streams (not before `body`'s time).
private func withStreams(
    _ readers: [DeviceReader], through front: NginxFront, _ listen: ConnectionString, _ log: SendLog, deadline: Int,
    httpClient: HTTPClient? = nil, _ body: () async throws -> ContinuousClock.Instant
) async throws {
    let client = HubClient(connectionString: listen, hub: "news", httpClient: httpClient ?? front.client)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for reader in readers {
            let installation = newsInstallation(reader.device, device: reader.device, tags: reader.tags.sorted())
            group.addTask { try await client.createOrUpdateInstallation(installation) }
        }
        try await group.waitForAll()
    }
    let loops = readers.map { reader in Task { await reader.run(client) } }
    var failure: (any Error)?
    do {
        let closed = { readers.filter { !$0.state.withLock(\.opened) } }
        try await eventually(
            "every stream to open (\(closed().count) did not: \(closed().first?.state.withLock(\.lastError) ?? ""))",
            every: .milliseconds(500)
        ) { closed().isEmpty }
        let earliest = try await body()
        // A timeout fails the test here; the caller's verdict still runs, to print the evidence.
        try? await eventually(
            "every reader to have every send", timeout: .seconds(deadline), every: .milliseconds(500)
        ) { Verdict(readers: readers, sends: log.all).complete }
        try await Task.sleep(until: max(earliest, .now + .seconds(2)))  // for any delivery repeated
    } catch { failure = error }
    for loop in loops { loop.cancel() }
    for loop in loops { await loop.value }
    if let failure { throw failure }
}

/// Requests under way, by number, and since when.
private final class Pending: Sendable {
    let started = Mutex<[Int: ContinuousClock.Instant]>([:])
}

/// One request's outcome: the answer or why none came, and how long it took.
private struct Reply: CustomStringConvertible, Sendable {
    var response: RawResponse?
    var failure: String?
    var seconds: Double
    var status: Int { response?.status ?? 0 }
    var description: String {
        "\(response.map { "\($0.status) \($0.body.prefix(200))" } ?? failure ?? "?") after \(String(format: "%.1f", seconds)) s"
    }

    init(_ call: () async throws -> RawResponse) async {
        let started = ContinuousClock.now
        do { response = try await call() } catch { failure = "\(type(of: error)): \(error)" }
        seconds = started.duration(to: .now) / .seconds(1)
    }
}

/// Every send and its answer: a notification id when acknowledged (201 and a Location).
private final class SendLog: Sendable {
    typealias Send = (tag: String, message: String, id: String?, answer: String)
    private let sends = Mutex<[Send]>([])
    var all: [Send] { sends.withLock { $0 } }

    func send(
        _ baseURL: String, _ token: String, tag: String, _ message: String, timeout: TimeAmount = .seconds(30)
    ) async -> Reply {
        let reply = await Reply {
            try await raw(
                .POST, "\(baseURL)/news/messages?api-version=2020-06",
                headers: [
                    ("Authorization", token), ("Content-Type", "application/json;charset=utf-8"),
                    ("ServiceBusNotification-Format", "template"), ("ServiceBusNotification-Tags", tag),
                ], body: #"{"messageParam":"\#(message)"}"#, timeout: timeout)
        }
        let id = reply.status == 201 ? reply.response?.headers.first(name: "Location").flatMap(HubClient.lastPathSegment) : nil
        sends.withLock { $0.append((tag, message, id, reply.response.map { "\($0.status)" } ?? "no answer")) }
        return reply
    }

    func send(_ node: HubProcess, tag: String, _ message: String) async -> Reply {
        await send(node.state.url, token(node.full), tag: tag, message)
    }
}

/// What nodes answered while the database was away.
private final class Outage: Sendable {
    let state = Mutex((counts: [String: Int](), slowest: 0.0, violations: [String]()))
    var summary: String {
        state.withLock { "\($0.counts.sorted { $0.key < $1.key }), slowest \(String(format: "%.1f", $0.slowest)) s" }
    }

    /// Sends to `node` once a second, or reads an installation from it every 2 s, for 10 s.
    /// Each answer must be acceptance, or 503 with Retry-After and an XML error, within 15 s.
    func probe(_ node: HubProcess, _ sending: Bool, installation: String, _ log: SendLog) async {
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<(sending ? 10 : 5) {
                group.addTask {
                    try? await Task.sleep(for: .seconds(index * (sending ? 1 : 2)))
                    let reply =
                        sending
                        ? await log.send(node, tag: categories[index % 6], "during \(node.port)-\(index)")
                        : await Reply {
                            try await raw(
                                .GET, "\(node.state.url)/news/installations/\(installation)?api-version=2020-06",
                                headers: [("Authorization", token(node.full))])
                        }
                    let retryAfter = reply.response?.headers.first(name: "Retry-After")
                    let refused = reply.status == 503 && retryAfter != nil && reply.response?.errorDetail != nil
                    let label = "\(sending ? "send" : "read") \(reply.status)"
                    self.state.withLock { state in
                        state.slowest = max(state.slowest, reply.seconds)
                        if reply.seconds <= 15, reply.status == (sending ? 201 : 200) || refused {
                            state.counts[label, default: 0] += 1
                        } else {
                            state.violations.append("\(label) at :\(node.port): \(reply), Retry-After \(retryAfter ?? "none")")
                        }
                    }
                }
            }
        }
    }
}

/// The devices' deliveries against the sends: each acknowledged send exactly once on every
/// device with its tag, in increasing seq; an unacknowledged one (its answer lost) on all or none.
private struct Verdict: CustomStringConvertible {
    static let faults = ["missing", "duplicates", "unexpected", "out of order", "unacknowledged on only some devices"]
    static let order =
        ["acknowledged sends", "deliveries expected", "received"] + faults
        + ["unacknowledged sends delivered", "streams that resumed", "reconnects"]
    var counts: [String: Int] = [:]
    var refused: [String: Int] = [:]
    var missing: [(reader: DeviceReader, id: String)] = []
    var examples: [String] = []
    var complete: Bool { missing.isEmpty && counts["unacknowledged on only some devices"] == 0 }

    init(readers: [DeviceReader], sends: [SendLog.Send]) {
        var due: [String: Set<String>] = [:]
        var unacknowledged: [String: String] = [:]
        for send in sends {
            guard let id = send.id else {
                unacknowledged[send.message] = send.tag
                refused[send.answer, default: 0] += 1
                continue
            }
            due[send.tag, default: []].insert(id)
        }
        let acknowledged = due.values.reduce(Set<String>()) { $0.union($1) }
        var reached: [String: Int] = [:]
        for reader in readers {
            let state = reader.state.withLock { $0 }
            let expected = reader.tags.reduce(Set<String>()) { $0.union(due[$1] ?? []) }
            let times = Dictionary(state.received.map { ($0.id, 1) }, uniquingKeysWith: +)
            missing += expected.subtracting(times.keys).map { (reader, $0) }
            let seqs = state.received.map(\.seq)
            for (name, value) in [
                ("deliveries expected", expected.count), ("received", seqs.count), ("duplicates", seqs.count - times.count),
                ("out of order", zip(seqs, seqs.dropFirst()).filter { $0 >= $1 }.count),
                ("streams that resumed", state.reconnects > 0 ? 1 : 0), ("reconnects", state.reconnects),
            ] { counts[name, default: 0] += value }
            var seen = Set<String>()
            for delivery in state.received where !acknowledged.contains(delivery.id) && seen.insert(delivery.id).inserted {
                if let alert = delivery.alert, let tag = unacknowledged[alert], reader.tags.contains(tag) {
                    reached[alert, default: 0] += 1
                } else {
                    counts["unexpected", default: 0] += 1
                    examples.append("\(reader.device.prefix(8)) got \(delivery.id) (\(delivery.alert ?? "?")), not sent to it")
                }
            }
            for (id, count) in times where count > 1 { examples.append("\(reader.device.prefix(8)) got \(id) \(count) times") }
        }
        counts["acknowledged sends"] = acknowledged.count
        counts["missing"] = missing.count
        counts["unacknowledged sends delivered"] = reached.count
        counts["unacknowledged on only some devices"] =
            reached.filter { alert, count in count != readers.filter { $0.tags.contains(unacknowledged[alert]!) }.count }.count
    }

    var description: String {
        Self.order.map { "\($0) \(counts[$0, default: 0])" }.joined(separator: ", ")
            + ", non-201 answers \(refused.values.reduce(0, +)) \(refused.sorted { $0.key < $1.key })"
    }

    /// Prints the summary; expects no fault, and prints the evidence of any.
    func check(_ title: String, since began: ContinuousClock.Instant, _ cluster: Cluster) async {
        print("\(title): \(self); \(began.duration(to: .now))")
        for fault in Self.faults { #expect(counts[fault, default: 0] == 0, "\(fault): \(counts[fault, default: 0])") }
        guard Self.faults.contains(where: { counts[$0, default: 0] > 0 }) else { return }
        let ids = Set(missing.map(\.id)).map { "'\($0)'" }.joined(separator: ",")
        let sql = """
            SELECT id = ANY(ARRAY[\(ids)]::text[]) AS missed, state, owner, count(*),
                max(round(lease_until - extract(epoch FROM now()))) AS lease_left FROM notification GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            """
        let rows = (try? await cluster.server.psql(sql, database: cluster.database)) ?? "(unreadable)"
        print("cluster evidence:", examples.prefix(12).joined(separator: "\n"), sql, rows, cluster.logs, separator: "\n")
    }
}
