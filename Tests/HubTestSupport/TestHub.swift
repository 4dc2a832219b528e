import AsyncHTTPClient
import Foundation
import LocalHub
import LocalHubSupport
import Logging
import NIOCore
import NIOHTTP1
import NotificationHubs
import ServiceLifecycle
import TestTiers

/// A local hub running in this process on an ephemeral loopback port, with its own folder.
public final class TestHub: Sendable {
    public let directory: URL
    public let state: LocalHubState
    public let hub: String
    public let listen: ConnectionString
    public let full: ConnectionString
    private let task: Task<Void, Error>
    private let shutdown: LocalHubShutdown

    public var baseURL: String { state.url }

    /// The port the hub listens on.
    public var port: Int { Int(state.url.split(separator: ":").last ?? "0") ?? 0 }

    private init(
        directory: URL, state: LocalHubState, hub: String, listen: ConnectionString, full: ConnectionString,
        task: Task<Void, Error>, shutdown: LocalHubShutdown
    ) {
        self.directory = directory
        self.state = state
        self.hub = hub
        self.listen = listen
        self.full = full
        self.task = task
        self.shutdown = shutdown
    }

    /// Runs `body` with a hub started for it, and stops the hub gracefully afterwards, also
    /// when `body` throws: no test leaves a hub, or a connection it accepted, behind.
    public static func with(
        hubs: [String] = ["news"], directory: URL = temporaryDirectory(), port: Int = 0, keepAlive: Duration = .seconds(15),
        tls: Bool = false, configure: (inout LocalHubConfiguration) -> Void = { _ in },
        _ body: (TestHub) async throws -> Void
    ) async throws {
        let hub = try await start(
            hubs: hubs, directory: directory, port: port, keepAlive: keepAlive, tls: tls, configure: configure)
        do {
            try await body(hub)
            await hub.stop()
        } catch {
            await hub.stop()
            throw error
        }
    }

    public static func temporaryDirectory() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hub-test-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Starts a hub serving `hubs` (the first is the one `listen`/`full` are for).
    /// Starts a hub; prefer `with`, which also stops it. A hub started here must be stopped
    /// with `await stop()`.
    public static func start(
        hubs: [String] = ["news"], directory: URL = temporaryDirectory(), port: Int = 0, keepAlive: Duration = .seconds(15),
        tls: Bool = false, configure: (inout LocalHubConfiguration) -> Void = { _ in }
    )
        async throws -> TestHub
    {
        try TestTier.requireFullSuite("a hub on a socket")
        var logger = Logger(label: "test-hub")
        logger.logLevel = .critical
        var configuration = LocalHubConfiguration(
            host: "127.0.0.1", port: port, dataDirectory: directory, hubs: hubs, tls: tls, keepAliveInterval: keepAlive)
        // Tests play thousands of devices from one address; those about the limits set them.
        configuration.clientRates = .unlimited
        configure(&configuration)
        let (ready, readyContinuation) = AsyncStream<LocalHubState>.makeStream()
        let shutdown = LocalHubShutdown()
        let task = Task { [configuration] in
            defer { readyContinuation.finish() }
            try await LocalHubServer.run(
                configuration: configuration, logger: logger, handleSignals: false, shutdown: shutdown
            ) { state in
                readyContinuation.yield(state)
                readyContinuation.finish()
            }
        }
        var iterator = ready.makeAsyncIterator()
        guard let state = await iterator.next() else {
            _ = try await task.value
            throw TestHubError(description: "the hub ended before it was ready")
        }
        let keys = try LocalHubKeyFile.read(directory.appendingPathComponent(LocalHubKeyFile.fileName))[hubs[0]]!
        let listen = try ConnectionString(
            parsing: LocalHubKeyFile.connectionString(
                baseURL: state.url, hub: hubs[0], rule: AuthorizationRule.listenRuleName,
                key: keys[AuthorizationRule.listenRuleName]!))
        let full = try ConnectionString(
            parsing: LocalHubKeyFile.connectionString(
                baseURL: state.url, hub: hubs[0], rule: AuthorizationRule.fullRuleName, key: keys[AuthorizationRule.fullRuleName]!
            ))
        return TestHub(
            directory: directory, state: state, hub: hubs[0], listen: listen, full: full, task: task, shutdown: shutdown)
    }

    /// Stops the hub gracefully (the server drains, streams end, the engine finishes) and
    /// waits until it has.
    public func stop() async {
        await shutdown.trigger()
        _ = try? await task.value
    }

    public func client(_ connectionString: ConnectionString, retry: RetryPolicy = .none) throws -> HubClient {
        try HubClient(connectionString: connectionString, retryPolicy: retry)
    }

    /// A token of `connectionString` for `resource` (default: the hub URL).
    public func token(_ connectionString: ConnectionString, resource: String? = nil, lifetime: TimeInterval = 3600) -> String {
        connectionString.token(hub: hub, resource: resource, lifetime: lifetime)
    }
}

extension ConnectionString {
    /// A token of this rule for `resource` (default: the URL of `hub`), valid for `lifetime`.
    public func token(hub: String, resource: String? = nil, lifetime: TimeInterval = 3600) -> String {
        SharedAccessSignature.make(resource: resource ?? hubURL(hub), keyName: keyName, key: key, lifetime: lifetime)
    }
}

public struct TestHubError: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

/// A raw HTTP answer.
public struct RawResponse: Sendable {
    public let status: Int
    public let headers: HTTPHeaders
    public let body: String

    public var errorDetail: String? { ServiceErrorBody(xml: body)?.detail }

    public init(status: Int, headers: HTTPHeaders, body: String) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Sends one raw request, as an SDK would shape it.
public func raw(
    _ method: HTTPMethod, _ url: String, headers: [(String, String)] = [], body: String? = nil,
    timeout: TimeAmount = .seconds(30)
) async throws -> RawResponse {
    var request = HTTPClientRequest(url: url)
    request.method = method
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    if let body { request.body = .bytes(ByteBuffer(string: body)) }
    let response = try await HubClient.sharedHTTPClient.execute(request, timeout: timeout)
    let text = String(buffer: try await response.body.collect(upTo: 32 << 20))
    return RawResponse(status: Int(response.status.code), headers: response.headers, body: text)
}

/// Reads a device stream until `count` deliveries arrived or `timeout` passed.
public func readStream(
    baseURL: String, hub: String, device: String, token: String, lastEventId: Int64? = nil, secret: String? = nil,
    count: Int, timeout: Double = 10
) async throws -> [BuiltInPushDelivery] {
    try await readStream(
        baseURL: baseURL, hub: hub, device: device, token: token, lastEventId: lastEventId, secret: secret,
        timeout: timeout, awaiting: "\(count) deliveries"
    ) { $0.count >= count }
}

/// Reads a device stream until what arrived is `enough` or `timeout` passed (an error naming
/// what it was `awaiting`).
public func readStream(
    baseURL: String, hub: String, device: String, token: String, lastEventId: Int64? = nil, secret: String? = nil,
    timeout: Double = 10, awaiting: String, until enough: @escaping @Sendable ([BuiltInPushDelivery]) -> Bool
) async throws -> [BuiltInPushDelivery] {
    var request = HTTPClientRequest(url: baseURL + BuiltInPushDelivery.path(hub: hub, device: device, resource: "stream"))
    request.headers.add(name: "Authorization", value: token)
    if let secret { request.headers.add(name: BuiltInPushDelivery.claimSecretHeader, value: secret) }
    if let lastEventId { request.headers.add(name: "Last-Event-ID", value: String(lastEventId)) }
    let response = try await HubClient.sharedHTTPClient.execute(request, timeout: .seconds(Int64(timeout) + 5))
    guard response.status == .ok else { throw TestHubError(description: "stream answered \(response.status)") }
    return try await withThrowingTaskGroup(of: [BuiltInPushDelivery].self) { group in
        group.addTask {
            var parser = ServerSentEventParser()
            var deliveries: [BuiltInPushDelivery] = []
            for try await chunk in response.body {
                for event in try parser.feed(chunk.readableBytesView) where event.event == "notification" {
                    deliveries.append(try BuiltInPushDelivery(json: JSONValue(parsing: event.data)))
                }
                if enough(deliveries) { break }
            }
            return deliveries
        }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(timeout * 1_000_000_000))
            throw TestHubError(description: "the stream did not bring \(awaiting) within \(timeout) s")
        }
        let result = try await group.next()!
        group.cancelAll()
        return result
    }
}

/// A valid APNs installation with the tutorial's template.
public func newsInstallation(_ id: String, device: String, tags: [String], userId: String? = nil) -> Installation {
    Installation(
        installationId: id, platform: .apns, pushChannel: device, tags: tags,
        templates: ["simpleAPNSTemplate": InstallationTemplate(body: #"{"aps":{"alert":"$(messageParam)"}}"#)], userId: userId)
}

/// A random 64-hex device token.
public func randomDevice() -> String {
    (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
}

/// The built `breaking-news` binary next to this test runner.
public func builtBinary() -> URL {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(
        "breaking-news")
}

/// A hub running as its own process, so that it can be killed.
public struct HubProcess: Sendable {
    public let process: ChildProcess.Running
    public let state: LocalHubState
    public let listen: ConnectionString
    public let full: ConnectionString

    /// No per-client limit: tests and benchmarks play thousands of devices from one address.
    public static let unlimitedClients = [
        "--client-new-devices-per-hour", "0", "--client-megabytes-per-hour", "0", "--client-streams", "0",
        "--client-connections", "0",
    ]

    /// Starts `breaking-news hub serve` on `port` (0: a free one), `arguments` appended to
    /// the command (`--store URL --node NAME` for a node of a cluster; a later per-client
    /// flag overrides `unlimitedClients`). Its output is appended to `log` when given, and
    /// not read otherwise.
    public static func start(
        directory: URL, hub: String = "news", port: Int = 0, arguments: [String] = [], log: URL? = nil
    ) async throws -> HubProcess {
        try TestTier.requireFullSuite("a hub process")
        let stateFile = directory.appendingPathComponent(LocalHubState.fileName)
        try? FileManager.default.removeItem(at: stateFile)
        // ChildProcess, not Foundation's Process (see RunningCommand).
        let process = try ChildProcess.start(
            [
                builtBinary().path, "hub", "serve", "--port", String(port), "--data", directory.path, "--hub", hub,
                "--log-level", "warning",
            ] + unlimitedClients + arguments)
        for output in [process.standardOutput, process.standardError] {
            if let log { copy(output, to: log.path) } else { close(output) }
        }
        // Up to 30 s: a node of a cluster migrates and loads from its database first, and
        // the machine may be busy.
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning, Date() < deadline {
            if let state = LocalHubState.read(stateFile), state.pid == process.pid {
                let keys = try LocalHubKeyFile.read(directory.appendingPathComponent(LocalHubKeyFile.fileName))[hub]!
                func cs(_ rule: String) throws -> ConnectionString {
                    try ConnectionString(
                        parsing: LocalHubKeyFile.connectionString(baseURL: state.url, hub: hub, rule: rule, key: keys[rule]!))
                }
                return HubProcess(
                    process: process, state: state, listen: try cs(AuthorizationRule.listenRuleName),
                    full: try cs(AuthorizationRule.fullRuleName))
            }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        process.signal(SIGKILL)
        let status = await process.exited()
        throw TestHubError(
            description: "the hub process did not start (exit status \(status))" + (log.map { "; see \($0.path)" } ?? ""))
    }

    /// Appends what `descriptor` brings to the file at `path` until its end, on a thread of
    /// its own; closes the descriptor.
    private static func copy(_ descriptor: Int32, to path: String) {
        let thread = Thread {
            defer { close(descriptor) }
            let file = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            defer { if file >= 0 { close(file) } }
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return }
                if file >= 0 { _ = buffer.withUnsafeBytes { write(file, $0.baseAddress, count) } }
            }
        }
        thread.name = "hub output"
        thread.start()
    }

    /// The port the hub listens on.
    public var port: Int { Int(state.url.split(separator: ":").last ?? "0") ?? 0 }

    /// Runs `body` with a hub process started for it, and stops it (SIGTERM, its graceful
    /// shutdown awaited) afterwards, also when `body` throws.
    public static func with(
        directory: URL, hub: String = "news", port: Int = 0, arguments: [String] = [], log: URL? = nil,
        _ body: (HubProcess) async throws -> Void
    ) async throws {
        let process = try await start(directory: directory, hub: hub, port: port, arguments: arguments, log: log)
        do {
            try await body(process)
            await process.stop()
        } catch {
            await process.stop()
            throw error
        }
    }

    public func kill() async {
        process.signal(SIGKILL)
        await process.exited()
    }

    /// Asks it to stop and waits until it has (its graceful shutdown), without blocking a thread.
    public func stop() async {
        process.signal(SIGTERM)
        await process.exited()
    }
}

/// Runs `service` (a Hummingbird application, say) while `body` runs, then shuts it down
/// gracefully and waits for it: a test server is never cancelled with connections in flight.
public func withService<T>(_ service: some Service, _ body: () async throws -> T) async throws -> T {
    var logger = Logger(label: "test-service")
    logger.logLevel = .critical
    let group = ServiceGroup(
        configuration: ServiceGroupConfiguration(services: [service], gracefulShutdownSignals: [], logger: logger))
    let task = Task { try await group.run() }
    do {
        let result = try await body()
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        return result
    } catch {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        throw error
    }
}

/// The value of an unlabelled series in Prometheus text (`name 6` or `name 6.0`).
public func metricValue(_ text: String, _ name: String) -> Double? {
    for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
        return Double(line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces))
    }
    return nil
}
