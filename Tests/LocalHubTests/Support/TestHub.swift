import AsyncHTTPClient
import Foundation
import LocalHub
import Logging
import NIOCore
import NIOHTTP1
import NotificationHubs
import Testing

/// A local hub running in this process on an ephemeral loopback port, with its own folder.
final class TestHub: Sendable {
    let directory: URL
    let state: LocalHubState
    let hub: String
    let listen: ConnectionString
    let full: ConnectionString
    private let task: Task<Void, Error>

    var baseURL: String { state.url }

    private init(
        directory: URL, state: LocalHubState, hub: String, listen: ConnectionString, full: ConnectionString,
        task: Task<Void, Error>
    ) {
        self.directory = directory
        self.state = state
        self.hub = hub
        self.listen = listen
        self.full = full
        self.task = task
    }

    static func temporaryDirectory() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hub-test-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Starts a hub serving `hubs` (the first is the one `listen`/`full` are for).
    static func start(hubs: [String] = ["news"], directory: URL = temporaryDirectory(), keepAlive: Double = 15) async throws
        -> TestHub
    {
        var logger = Logger(label: "test-hub")
        logger.logLevel = .critical
        let configuration = LocalHubConfiguration(
            host: "127.0.0.1", port: 0, dataDirectory: directory, hubs: hubs, keepAliveInterval: keepAlive)
        let (ready, readyContinuation) = AsyncStream<LocalHubState>.makeStream()
        let task = Task {
            try await LocalHubServer.run(configuration: configuration, logger: logger, handleSignals: false) { state in
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
        return TestHub(directory: directory, state: state, hub: hubs[0], listen: listen, full: full, task: task)
    }

    /// Stops the hub and waits for it to finish.
    func stop() async {
        task.cancel()
        _ = try? await task.value
    }

    func client(_ connectionString: ConnectionString, retry: RetryPolicy = .none) throws -> HubClient {
        try HubClient(connectionString: connectionString, retryPolicy: retry)
    }

    /// A token of `connectionString` for `resource` (default: the hub URL).
    func token(_ connectionString: ConnectionString, resource: String? = nil, lifetime: TimeInterval = 3600) -> String {
        SharedAccessSignature.make(
            resource: resource ?? connectionString.hubURL(hub), keyName: connectionString.keyName, key: connectionString.key,
            lifetime: lifetime)
    }
}

struct TestHubError: Error, CustomStringConvertible {
    let description: String
}

/// A raw HTTP answer.
struct RawResponse {
    let status: Int
    let headers: HTTPHeaders
    let body: String

    var errorDetail: String? { ServiceErrorBody(xml: body)?.detail }
}

/// Sends one raw request, as an SDK would shape it.
func raw(
    _ method: HTTPMethod, _ url: String, headers: [(String, String)] = [], body: String? = nil
) async throws -> RawResponse {
    var request = HTTPClientRequest(url: url)
    request.method = method
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    if let body { request.body = .bytes(ByteBuffer(string: body)) }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
    let text = String(buffer: try await response.body.collect(upTo: 32 << 20))
    return RawResponse(status: Int(response.status.code), headers: response.headers, body: text)
}

/// Reads a device stream until `count` deliveries arrived or `timeout` passed.
func readStream(
    baseURL: String, hub: String, device: String, token: String, lastEventId: Int64? = nil, count: Int, timeout: Double = 10
) async throws -> [SandboxDelivery] {
    var request = HTTPClientRequest(url: baseURL + SandboxDelivery.path(hub: hub, device: device, resource: "stream"))
    request.headers.add(name: "Authorization", value: token)
    if let lastEventId { request.headers.add(name: "Last-Event-ID", value: String(lastEventId)) }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(Int64(timeout) + 5))
    guard response.status == .ok else { throw TestHubError(description: "stream answered \(response.status)") }
    return try await withThrowingTaskGroup(of: [SandboxDelivery].self) { group in
        group.addTask {
            var parser = ServerSentEventParser()
            var deliveries: [SandboxDelivery] = []
            for try await chunk in response.body {
                for event in parser.feed(chunk.readableBytesView) where event.event == "notification" {
                    deliveries.append(try SandboxDelivery(json: JSONValue(parsing: event.data)))
                }
                if deliveries.count >= count { break }
            }
            return deliveries
        }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(timeout * 1_000_000_000))
            throw TestHubError(description: "the stream did not bring \(count) deliveries within \(timeout) s")
        }
        let result = try await group.next()!
        group.cancelAll()
        return result
    }
}

/// A valid APNs installation with the tutorial's template.
func newsInstallation(_ id: String, device: String, tags: [String], userId: String? = nil) -> Installation {
    Installation(
        installationId: id, platform: .apns, pushChannel: device, tags: tags,
        templates: ["simpleAPNSTemplate": InstallationTemplate(body: #"{"aps":{"alert":"$(messageParam)"}}"#)], userId: userId)
}

/// A random 64-hex device token.
func randomDevice() -> String {
    (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
}
