import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NotificationHubs
import ServiceLifecycle

/// Why a local hub could not start.
public struct LocalHubStartError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// The local hub server: the HTTP front, the engine, the SQLite store, the keys, and the
/// state file clients find it by.
public enum LocalHubServer {
    /// Runs until SIGTERM or SIGINT (or cancellation). `onReady` is called with the state
    /// once the server listens; the state file is written at the same moment and removed on exit.
    /// - Parameter handleSignals: shut down gracefully on SIGTERM and SIGINT (off for hubs
    ///   embedded in tests, which stop by cancellation).
    public static func run(
        configuration: LocalHubConfiguration, logger: Logger, handleSignals: Bool = true,
        onReady: @escaping @Sendable (LocalHubState) -> Void = { _ in }
    ) async throws {
        let directory = configuration.dataDirectory
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let lock = try DataDirectoryLock(directory: directory)
        defer { lock.release() }

        let keys = try HubKeys.loadOrCreate(in: directory, hubs: configuration.hubs)
        let store = try SQLiteHubStore(path: configuration.databaseURL.path)
        let engine = HubEngine(
            store: store, hubs: configuration.hubs, keepAliveInterval: configuration.keepAliveInterval, logger: logger)
        try await engine.start()

        let server: HTTPServerBuilder
        if configuration.tls {
            server = try .tls(.http1(), tlsConfiguration: SelfSignedCertificate.serverConfiguration(in: directory))
        } else {
            server = .http1()
        }
        let scheme = configuration.tls ? "https" : "http"
        let stateURL = configuration.stateURL
        let pid = ProcessInfo.processInfo.processIdentifier
        let app = Application(
            responder: HubResponder(engine: engine, keys: keys, configuration: configuration),
            server: server,
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port), serverName: "LocalNotificationHub",
                backlog: 1024),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                let host = configuration.host == "0.0.0.0" ? "127.0.0.1" : configuration.host
                let state = LocalHubState(
                    pid: pid, url: "\(scheme)://\(host):\(port)", hubs: configuration.hubs, tls: configuration.tls,
                    started: W3CDate.format(Date()))
                do {
                    try AtomicFile.write(Data(state.json.text.utf8), to: stateURL, permissions: 0o644)
                } catch {
                    logger.error("cannot write \(stateURL.path): \(error)")
                }
                logger.info("local hub listening on \(state.url), hubs: \(configuration.hubs.joined(separator: ", "))")
                onReady(state)
            },
            logger: logger
        )
        defer {
            if LocalHubState.read(stateURL)?.pid == pid { try? FileManager.default.removeItem(at: stateURL) }
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: EngineService(engine: engine)),
                    .init(service: app),
                    .init(service: StreamCloser(streams: engine.streams)),
                ],
                gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
                logger: logger))
        do {
            try await group.run()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw LocalHubStartError(
                description: "port \(configuration.port) on \(configuration.host) is already in use; pick another with --port")
        }
    }
}

/// Runs the engine's writer and dispatcher; stops them last, after the server has drained.
struct EngineService: Service {
    let engine: HubEngine

    func run() async throws {
        await withGracefulShutdownHandler {
            await engine.run()
        } onGracefulShutdown: {
            engine.stop()
        }
    }
}

/// Ends device streams as soon as shutdown starts, so the server can drain its requests.
struct StreamCloser: Service {
    let streams: DeviceStreams

    func run() async throws {
        try? await gracefulShutdown()
        streams.closeAll()
    }
}

/// An exclusive lock on a data folder: one hub per folder. The kernel releases it when the
/// process ends, however it ends.
final class DataDirectoryLock: Sendable {
    private let descriptor: Int32

    init(directory: URL) throws {
        let path = directory.appendingPathComponent("hub.lock").path
        let fd = open(path, O_CREAT | O_RDWR, 0o600)
        guard fd >= 0 else {
            throw LocalHubStartError(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            let running = LocalHubState.read(directory.appendingPathComponent(LocalHubState.fileName))
            let detail = running.map { " (pid \($0.pid) at \($0.url))" } ?? ""
            throw LocalHubStartError(
                description: "another hub is already running on \(directory.path)\(detail); stop it with 'breaking-news hub stop'"
            )
        }
        descriptor = fd
    }

    func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
