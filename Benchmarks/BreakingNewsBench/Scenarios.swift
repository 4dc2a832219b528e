import AsyncHTTPClient
import BreakingNewsKit
import Foundation
import HubTestSupport
import LocalHub
import LocalHubSupport
import NIOCore
import NewsTerminal
import NotificationHubs

let categories = ["World", "Politics", "Business", "Technology", "Science", "Sports"]
let templateBody = #"{"aps":{"alert":"$(messageParam)"}}"#

/// 1. Match and render in process: 100,000 installations on 1–3 random categories, one
/// send per category; rendered notifications per second.
func matchAndRender(installations: Int, runs: Int) async throws -> BenchRow {
    let engine = HubEngine(store: MemoryHubStore(), configuration: .init(hubs: ["bench"]))
    try await engine.start()
    let task = Task { await engine.run() }
    defer { task.cancel() }
    let loading = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<8 {
            group.addTask {
                var random = SystemRandomNumberGenerator()
                for i in stride(from: worker, to: installations, by: 8) {
                    let tags = Array(categories.shuffled(using: &random).prefix(Int.random(in: 1...3, using: &random)))
                    let installation = try Installation(
                        installationId: "i\(i)", platform: .apns, pushChannel: String(format: "%064x", i), tags: tags,
                        templates: ["simpleAPNSTemplate": InstallationTemplate(body: templateBody)]
                    ).validatedForStorage(lastUpdate: "2026-01-01T00:00:00Z")
                    _ = try await engine.write(.putInstallation(hub: "bench", installation))
                }
            }
        }
        try await group.waitForAll()
    }
    log("registered \(installations) installations in \(String(format: "%.1f", (ContinuousClock.now - loading).seconds)) s")
    var rates: [Double] = []
    for run in 0..<runs {
        let start = ContinuousClock.now
        var rendered = 0
        for category in categories {
            let notification = StoredNotification(
                hub: "bench", id: "n\(run)-\(category)", format: .template, tagExpression: category,
                body: #"{"messageParam":"Breaking \#(category) News : markets rally"}"#)
            rendered += engine.plan(notification).messageCount
        }
        let seconds = (ContinuousClock.now - start).seconds
        rates.append(Double(rendered) / seconds)
        log("match and render run \(run + 1): \(rendered) notifications in \(String(format: "%.1f", seconds * 1000)) ms")
    }
    let value = median(rates)
    return BenchRow(
        scenario: "match+render (100k installations, in process)", value: value, unit: "notifications/s", target: ">= 1000000",
        met: value >= 1_000_000)
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// A hub process for the HTTP scenarios.
struct BenchHub {
    /// The hub's process; nil for a front (nginx) before nodes, which it does not own.
    let process: Process?
    let url: String
    let port: Int
    let listen: ConnectionString
    let full: ConnectionString

    /// - Parameter arguments: more options of `hub serve` (`--store`, `--node`).
    /// - Parameter keepingData: start on what `directory` holds (else it starts empty).
    static func start(binary: String, directory: URL, arguments: [String] = [], keepingData: Bool = false) async throws
        -> BenchHub
    {
        if !keepingData { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments =
            [
                "hub", "serve", "--port", "0", "--data", directory.path, "--hub", "breakingnews", "--log-level", "error",
            ] + HubProcess.unlimitedClients + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.standardError
        try process.run()
        keepTrack(of: process)
        let stateFile = directory.appendingPathComponent(LocalHubState.fileName)
        for _ in 0..<500 {
            if let state = LocalHubState.read(stateFile), state.pid == process.processIdentifier {
                let keys = try LocalHubKeyFile.read(directory.appendingPathComponent(LocalHubKeyFile.fileName))["breakingnews"]!
                func cs(_ rule: String) throws -> ConnectionString {
                    try ConnectionString(
                        parsing: LocalHubKeyFile.connectionString(
                            baseURL: state.url, hub: "breakingnews", rule: rule, key: keys[rule]!))
                }
                return BenchHub(
                    process: process, url: state.url, port: Int(state.url.split(separator: ":").last!)!,
                    listen: try cs(AuthorizationRule.listenRuleName),
                    full: try cs(AuthorizationRule.fullRuleName))
            }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        process.terminate()
        throw BenchError(description: "the hub did not start")
    }

    func token(_ cs: ConnectionString) -> String {
        SharedAccessSignature.make(resource: url + "/", keyName: cs.keyName, key: cs.key, lifetime: 86_400)
    }

    /// The same hub reached through a front at `url`: tokens signed for the front's address.
    func behind(url: String, port: Int) throws -> BenchHub {
        func moved(_ cs: ConnectionString) throws -> ConnectionString {
            try ConnectionString(
                parsing: LocalHubKeyFile.connectionString(baseURL: url, hub: "breakingnews", rule: cs.keyName, key: cs.key))
        }
        return BenchHub(process: nil, url: url, port: port, listen: try moved(listen), full: try moved(full))
    }

    func stop() {
        guard let process else { return }
        process.terminate()
        process.waitUntilExit()
        forget(process)
    }
}

/// What the load generator measured.
struct LoadResult {
    var rate: Double
    var p50: Double
    var p99: Double
    var bad: Int
}

/// Sends `total` requests from a template (`{{TOKEN}}` filled in) on 32 keep-alive
/// connections with the C load generator.
func load(_ loadgen: String, port: Int, template: URL, token: String, total: Int, expect: Int, prefix: String) throws
    -> LoadResult
{
    let text = try String(contentsOf: template, encoding: .utf8).replacingOccurrences(of: "{{TOKEN}}", with: token)
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("load-\(UUID().uuidString).http")
    try Data(text.utf8).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let (_, output) = try runProgram(
        loadgen, ["127.0.0.1", String(port), "32", String(total), file.path, String(expect), prefix])
    guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
        let json = try? JSONValue(parsing: String(line))
    else {
        throw BenchError(description: "the load generator printed no result: \(output)")
    }
    func number(_ key: String) -> Double {
        if case .number(let n)? = json[key] { return Double(n) ?? 0 }
        return 0
    }
    return LoadResult(rate: number("rate"), p50: number("p50_ms"), p99: number("p99_ms"), bad: Int(number("bad")))
}

/// 2. Registration ingest: PUT installation on 32 keep-alive connections, each 200 durable,
/// against a bare "200 OK" Hummingbird route in the same run.
func registrationIngest(loadgen: String, hub: BenchHub, barePort: Int, scripts: URL, total: Int, runs: Int) throws -> [BenchRow] {
    let token = hub.token(hub.listen)
    let template = scripts.appendingPathComponent("put-installation.http")
    var hubResults: [LoadResult] = []
    var bareResults: [LoadResult] = []
    for run in 0..<runs {
        let result = try load(
            loadgen, port: hub.port, template: template, token: token, total: total, expect: 200, prefix: "r\(run)")
        if result.bad > 0 { throw BenchError(description: "\(result.bad) installation PUTs failed") }
        hubResults.append(result)
        let peer = try load(
            loadgen, port: barePort, template: template, token: token, total: total, expect: 200, prefix: "b\(run)")
        bareResults.append(peer)
        log(
            "ingest run \(run + 1): hub \(Int(result.rate)) req/s (p99 \(String(format: "%.2f", result.p99)) ms), bare route \(Int(peer.rate)) req/s"
        )
    }
    let rate = median(hubResults.map(\.rate))
    let peer = median(bareResults.map(\.rate))
    return [
        BenchRow(
            scenario: "registration ingest (20k PUT installation, 32 conns)", value: rate, unit: "requests/s",
            target: ">= 10000 and >= 0.5 x bare", met: rate >= 10_000 && rate >= 0.5 * peer, peer: "bare Hummingbird 200 route",
            peerValue: peer,
            ratio: rate / peer),
        BenchRow(
            scenario: "registration ingest p99", value: median(hubResults.map(\.p99)), unit: "ms", target: "(reported)",
            met: true,
            peer: "bare Hummingbird 200 route", peerValue: median(bareResults.map(\.p99)),
            ratio: median(hubResults.map(\.p99)) / median(bareResults.map(\.p99))),
    ]
}

/// 4. Durable sends: template sends, each 201 only after the notification is on disk.
func durableSends(loadgen: String, hub: BenchHub, scripts: URL, total: Int, runs: Int) throws -> BenchRow {
    let token = hub.token(hub.full)
    var rates: [Double] = []
    for run in 0..<runs {
        let result = try load(
            loadgen, port: hub.port, template: scripts.appendingPathComponent("send-template.http"), token: token, total: total,
            expect: 201,
            prefix: "s\(run)")
        if result.bad > 0 { throw BenchError(description: "\(result.bad) sends failed") }
        rates.append(result.rate)
        log("durable sends run \(run + 1): \(Int(result.rate)) sends/s (p99 \(String(format: "%.2f", result.p99)) ms)")
    }
    let value = median(rates)
    return BenchRow(
        scenario: "durable template sends (20k, 32 conns)", value: value, unit: "sends/s", target: ">= 5000", met: value >= 5000)
}

/// Registers `count` installations (device tokens = index in hex) with one tag.
func register(hub: BenchHub, tag: String, first: Int, count: Int) async throws {
    let client = HubClient(connectionString: hub.listen, hub: "breakingnews", retryPolicy: .none)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<16 {
            group.addTask {
                for i in stride(from: first + worker, to: first + count, by: 16) {
                    try await client.createOrUpdateInstallation(
                        Installation(
                            installationId: "fan-\(i)", platform: .apns, pushChannel: String(format: "%064x", i), tags: [tag],
                            templates: ["simpleAPNSTemplate": InstallationTemplate(body: templateBody)]))
                }
            }
        }
        try await group.waitForAll()
    }
}

struct FanoutResult {
    var last: Double
    var p50: Double
    var p99: Double
}

func runFanout(
    _ client: String, port: Int, subscribePath: String, subscribers: Int, header: String, publishPath: String,
    publishHeaders: String, body: String, marker: String, first: Int, rounds: Int
) throws -> [FanoutResult] {
    let directory = FileManager.default.temporaryDirectory
    let headersFile = directory.appendingPathComponent("fanout-headers-\(UUID().uuidString)")
    let bodyFile = directory.appendingPathComponent("fanout-body-\(UUID().uuidString)")
    try Data(publishHeaders.utf8).write(to: headersFile)
    try Data(body.utf8).write(to: bodyFile)
    defer {
        try? FileManager.default.removeItem(at: headersFile)
        try? FileManager.default.removeItem(at: bodyFile)
    }
    let (status, output) = try runProgram(
        client,
        [
            "127.0.0.1", String(port), subscribePath, String(subscribers), header, publishPath, headersFile.path, bodyFile.path,
            marker, String(first), String(rounds),
        ])
    let lines = output.split(separator: "\n")
    let objects = lines.compactMap { try? JSONValue(parsing: String($0)) }
    guard status == 0, objects.count == rounds else {
        throw BenchError(description: "fanout failed (\(status)): \(output)")
    }
    return objects.map { json in
        func number(_ key: String) -> Double {
            if case .number(let n)? = json[key] { return Double(n) ?? .nan }
            return .nan
        }
        return FanoutResult(last: number("last_ms"), p50: number("p50_ms"), p99: number("p99_ms"))
    }
}

/// 3. Fan-out to 1,000 live terminals, against nginx + nchan in the same run. Each run
/// registers and opens its streams anew and publishes once, or `rounds` times one after
/// another (`--fanout-rounds`, for profiling the publishes apart from the set-up).
func fanout(client: String, hub: BenchHub, nchanPort: Int?, subscribers: Int, runs: Int, rounds: Int) async throws
    -> [BenchRow]
{
    var hubResults: [FanoutResult] = []
    var peerResults: [FanoutResult] = []
    let listen = hub.token(hub.listen)
    let full = hub.token(hub.full)
    for run in 0..<runs {
        let tag = "Fanout\(run)"
        let first = run * subscribers
        try await register(hub: hub, tag: tag, first: first, count: subscribers)
        let marker = "bench-marker-\(UUID().uuidString)"
        let results = try runFanout(
            client, port: hub.port, subscribePath: "/_sandbox/apns/breakingnews/devices/%064x/stream", subscribers: subscribers,
            header: "Authorization: \(listen)", publishPath: "/breakingnews/messages?api-version=2015-01",
            publishHeaders:
                "Authorization: \(full)\r\nServiceBusNotification-Format: template\r\nServiceBusNotification-Tags: \(tag)\r\nContent-Type: application/json\r\n",
            body: "{\"messageParam\":\"\(marker)\"}", marker: marker, first: first, rounds: rounds)
        hubResults += results
        var line = "fan-out run \(run + 1): hub last " + results.map { String(format: "%.1f", $0.last) }.joined(separator: ", ")
        line += " ms (p50 " + results.map { String(format: "%.1f", $0.p50) }.joined(separator: ", ") + ")"
        if let nchanPort {
            let peerMarker = "bench-marker-\(UUID().uuidString)"
            let peer = try runFanout(
                client, port: nchanPort, subscribePath: "/sub", subscribers: subscribers, header: "-", publishPath: "/pub",
                publishHeaders: "Content-Type: text/plain\r\n", body: peerMarker, marker: peerMarker, first: 0, rounds: rounds)
            peerResults += peer
            line += ", nchan last " + peer.map { String(format: "%.1f", $0.last) }.joined(separator: ", ") + " ms"
        }
        log(line)
        try await Task.sleep(nanoseconds: 300_000_000)
    }
    let last = median(hubResults.map(\.last))
    let peer = peerResults.isEmpty ? nil : median(peerResults.map(\.last))
    let ratio = peer.map { last / $0 }
    // The spread: the slowest run against the median, the hub's and the peer's.
    let slowest = (hubResults.map(\.last).max() ?? .nan) / last
    let peerSlowest = peer.map { (peerResults.map(\.last).max() ?? .nan) / $0 }
    return [
        BenchRow(
            scenario: "fan-out: 1 send -> 1000 streams, last device", value: last, unit: "ms", target: "ratio <= 1.0",
            met: ratio.map { $0 <= 1.0 } ?? false,
            peer: "nginx 1.22 + nchan", peerValue: peer, ratio: ratio),
        BenchRow(
            scenario: "fan-out: slowest run / median run", value: slowest, unit: "x", target: "<= 1.5", met: slowest <= 1.5,
            peer: "nginx + nchan", peerValue: peerSlowest, ratio: peerSlowest.map { slowest / $0 }),
        BenchRow(
            scenario: "fan-out per-device latency p50", value: median(hubResults.map(\.p50)), unit: "ms", target: "(reported)",
            met: true,
            peer: "nginx + nchan", peerValue: peerResults.isEmpty ? nil : median(peerResults.map(\.p50)),
            ratio: peerResults.isEmpty ? nil : median(hubResults.map(\.p50)) / median(peerResults.map(\.p50))),
        BenchRow(
            scenario: "fan-out per-device latency p99", value: median(hubResults.map(\.p99)), unit: "ms", target: "(reported)",
            met: true,
            peer: "nginx + nchan", peerValue: peerResults.isEmpty ? nil : median(peerResults.map(\.p99)),
            ratio: peerResults.isEmpty ? nil : median(hubResults.map(\.p99)) / median(peerResults.map(\.p99))),
    ]
}

/// 5c. Redraw of the log screen holding 10,000 messages sent a minute apart (a week of
/// them, under their days' separators), on the virtual terminal: newest first, oldest first
/// (`O`), and limited to the unread (`l`, the row above the category, Enter).
enum LogView: CaseIterable {
    case newestFirst, oldestFirst, unreadOnly

    var name: String {
        switch self {
        case .newestFirst: "terminal: redraw log of 10,000 messages"
        case .oldestFirst: "terminal: redraw log of 10,000, oldest first"
        case .unreadOnly: "terminal: redraw log of 10,000, unread only"
        }
    }

    var keys: [Key] {
        switch self {
        case .newestFirst: []
        case .oldestFirst: [.character("O")]
        case .unreadOnly: [.character("l"), .up, .enter]
        }
    }
}

func logRedraw(entries: Int, runs: Int, view: LogView) -> BenchRow {
    var items: [InboxEntry] = []
    let start = Date(timeIntervalSince1970: 1_795_000_000)
    for i in 0..<entries {
        let category = categories[i % categories.count]
        let sent = W3CDate.format(start.addingTimeInterval(Double(i) * 60))
        let delivery = BuiltInPushDelivery(
            seq: Int64(i + 1), notificationId: "n\(i)", hub: "bench", device: "ab", template: "simpleAPNSTemplate",
            tags: category, deliveredAt: sent,
            payload: .object([("aps", .object([("alert", .string("Breaking \(category) News : item \(i)"))]))]))
        items.append(InboxEntry(testing: delivery, category: category, index: i + 1, receivedAt: sent))
    }
    // The newest seventh unread.
    let unread = entries / 7
    let read = ReadMarks([1...(entries - unread)])
    var state = AppState(
        categories: categories.map(Category.init), selection: [Category("World")], registration: nil, items: items,
        readMarks: read, rows: 30, columns: 100, now: start.addingTimeInterval(Double(entries) * 60))
    for key in [.character("3")] + view.keys { _ = state.reduce(.key(key)) }
    // The view measured is the one named: every message, or the unread (the cursor read one).
    let shown = view == .unreadOnly ? unread - 1 : entries
    guard state.visibleCount >= shown, state.visibleCount <= shown + 1 else {
        fatalError("\(view): \(state.visibleCount) shown, \(shown) expected")
    }
    let terminal = VirtualTerminal(rows: 30, columns: 100)
    var times: [Double] = []
    for i in 0..<runs {
        _ = state.reduce(.key(i % 2 == 0 ? .pageDown : .down))
        let start = ContinuousClock.now
        Layout.render(state, on: terminal)
        times.append((ContinuousClock.now - start).seconds * 1000)
    }
    let value = median(times)
    return BenchRow(scenario: view.name, value: value, unit: "ms", target: "< 2", met: value < 2)
}

/// 5d. Editing in the compose field, on the virtual terminal: a key typed into a 4 KB draft of
/// several lines
/// until its frame is drawn, and a 1 KB paste until its frame is drawn.
func editing(runs: Int) -> [BenchRow] {
    // Several lines, each wrapping over rows of the field, as real news is.
    var draft = ""
    var sentence = 0
    while draft.utf8.count < 4096 {
        sentence += 1
        draft += "Polls close at 22:00 🗳️ in 🇫🇷, counting starts at once." + (sentence % 4 == 0 ? "\n" : " ")
    }
    func composing(_ text: String) -> AppState {
        var state = AppState(
            categories: categories.map(Category.init), selection: [], registration: nil, items: [], rows: 30, columns: 100,
            draft: text)
        _ = state.reduce(.key(.character("2")))
        return state
    }
    let terminal = VirtualTerminal(rows: 30, columns: 100)
    var state = composing(draft)
    _ = state.reduce(.key(.home))
    var keys: [Double] = []
    for i in 0..<runs {
        // Typing in the middle of the draft, where every later character moves.
        if i == 0 { for _ in 0..<2000 { _ = state.reduce(.key(.right)) } }
        let start = ContinuousClock.now
        _ = state.reduce(.key(.character("x")))
        Layout.render(state, on: terminal)
        keys.append((ContinuousClock.now - start).seconds * 1000)
    }
    var pasteText = ""
    while pasteText.utf8.count < 1024 { pasteText += "Line of pasted news, 決勝 ⚽\n" }
    var pastes: [Double] = []
    for _ in 0..<max(5, runs / 20) {
        var fresh = composing("")
        let start = ContinuousClock.now
        _ = fresh.reduce(.key(.paste(pasteText)))
        Layout.render(fresh, on: terminal)
        pastes.append((ContinuousClock.now - start).seconds * 1000)
    }
    let key = median(keys)
    let paste = median(pastes)
    return [
        BenchRow(scenario: "terminal: key to frame, 4 KB draft", value: key, unit: "ms", target: "< 2", met: key < 2),
        BenchRow(scenario: "terminal: 1 KB paste to frame", value: paste, unit: "ms", target: "< 50", met: paste < 50),
    ]
}
