import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import LocalHubSupport
import Logging
import NIOCore
import NotificationHubs
import ServiceLifecycle
import Synchronization

/// Why a local hub could not start.
public struct LocalHubStartError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// The local hub server: the HTTP front, the engine, the SQLite store, the keys, and the
/// state file clients find it by.
public enum LocalHubServer {
    /// Runs until SIGTERM or SIGINT, until `shutdown` is triggered, or until cancelled; every
    /// way but cancellation drains the server gracefully. `onReady` is called with the state
    /// once the server listens; the state file is written at the same moment and removed on
    /// exit.
    /// - Parameter handleSignals: shut down gracefully on SIGTERM and SIGINT (off for hubs
    ///   embedded in tests, which stop through `shutdown`).
    public static func run(
        configuration: LocalHubConfiguration, logger: Logger, handleSignals: Bool = true,
        shutdown: LocalHubShutdown = LocalHubShutdown(),
        onReady: @escaping @Sendable (LocalHubState) -> Void = { _ in }
    ) async throws {
        let directory = configuration.dataDirectory
        try DataFolder.prepare(directory, files: LocalHubDefaults.dataFiles)
        let lock = try DataDirectoryLock(directory: directory)
        defer { lock.release() }
        // Holding the lock, no other hub runs here: a state file left now is stale.
        DataFolder.removeLeftovers(in: directory, of: LocalHubDefaults.dataFiles, stale: [LocalHubState.fileName])

        var keys = try HubKeys.loadOrCreate(in: directory, hubs: configuration.hubs)
        let store: any HubStore
        if let url = configuration.storeURL {
            let shared: PostgresHubStore
            do {
                shared = try await PostgresHubStore(
                    url: url, password: configuration.storePassword, node: configuration.effectiveNodeName, logger: logger)
                // Every node serves the keys kept in the database; the data folder keeps a
                // copy, which the command line reads.
                keys = try await keys.sharing(through: shared, in: directory)
            } catch let error as StoreUnavailable {
                throw LocalHubStartError(
                    description: "cannot reach the database at \(PostgresHubStore.redacted(url)): \(error)")
            } catch let error as StoreFailure {
                throw LocalHubStartError(
                    description: "cannot use the database at \(PostgresHubStore.redacted(url)): \(error)")
            }
            store = shared
        } else {
            store = try SQLiteHubStore(path: configuration.databaseURL.path)
        }
        defer { (store as? any SharedHubStore)?.shutdown() }
        try DataFolder.prepare(directory, files: LocalHubDefaults.dataFiles)
        let limits = ConnectionLimits(configuration: configuration, logger: logger)
        let providers: ExternalPushServices
        do {
            providers = try await ExternalPushServices.load(
                configuration.effectiveProvidersFile, hubs: configuration.hubs, logger: logger)
        } catch {
            throw LocalHubStartError(description: error.description)
        }
        let secret = LocalHubProof.makeSecret()
        let hub = HubApplication(
            store: store, configuration: configuration, keys: keys, secret: secret, maximumStreams: limits.streams,
            pushServices: providers.services, logger: logger)
        let engine = hub.engine
        do {
            try await engine.start()
        } catch {
            await providers.shutdown()
            throw error
        }

        let perClient = ClientConnections(
            limit: configuration.clientRates.connections, trusted: configuration.trustedProxies)
        let channel = HTTP1Channel.Configuration(
            additionalChannelHandlers: [
                ClientConnectionHandler(perClient), BodyDeadlineHandler(timeout: limits.requestTimeout),
            ],
            idleTimeout: limits.idleTimeout,
            httpDecoderConfiguration: .init(maxHeaderFieldSize: 16 * 1024, maxHeaderListSize: 64 * 1024, maxHeaderFieldCount: 100)
        )
        let server: HTTPServerBuilder
        if configuration.tls {
            server = try .tls(
                .http1(configuration: channel), tlsConfiguration: SelfSignedCertificate.serverConfiguration(in: directory))
        } else {
            server = .http1(configuration: channel)
        }
        let scheme = configuration.tls ? "https" : "http"
        let stateURL = configuration.stateURL
        let stateFile = StateFile(url: stateURL, logger: logger)
        let pid = ProcessInfo.processInfo.processIdentifier
        let keyRing = hub.keyRing
        let app = Application(
            responder: hub.router().buildResponder(),
            server: server,
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port), serverName: "LocalNotificationHub",
                backlog: 1024, availableConnectionsDelegate: MaximumAvailableConnections(limits.connections, logger: logger)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                let host = configuration.host == "0.0.0.0" ? "127.0.0.1" : configuration.host
                let state = LocalHubState(
                    pid: pid, url: "\(scheme)://\(host):\(port)", hubs: configuration.hubs, tls: configuration.tls,
                    started: W3CDate.format(Date()), secret: secret, retention: configuration.retention.age,
                    deliveryLogBytes: configuration.retention.maximumLogBytes, keysGeneration: keyRing.keys.generation,
                    node: configuration.storeURL == nil ? nil : configuration.effectiveNodeName)
                stateFile.write(state)
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
                    .init(service: StreamCloser(engine: engine)),
                    .init(
                        service: KeyWatcher(
                            ring: keyRing, streams: engine.deliveries.streams,
                            source: (store as? any SharedHubStore).map { .shared($0, directory) } ?? .folder(directory),
                            logger: logger,
                            acknowledge: { generation in
                                stateFile.update { $0.keysGeneration = max($0.keysGeneration ?? 0, generation) }
                                if let shared = store as? any SharedHubStore {
                                    do {
                                        try await shared.noteKeysGeneration(generation, now: Date())
                                    } catch {
                                        logger.warning("cannot note in the database the keys this node serves: \(error)")
                                    }
                                }
                            })),
                ],
                gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
                logger: logger))
        await shutdown.attach(group)
        do {
            try await group.run()
            await providers.shutdown()
        } catch {
            await providers.shutdown()
            guard let error = error as? IOError, error.errnoCode == EADDRINUSE else { throw error }
            throw LocalHubStartError(description: Self.portInUse(configuration.port, host: configuration.host))
        }
    }

    /// Why the hub cannot listen on `port`. When nothing listens there but a connection of
    /// this machine has it as its own end: the kernel hands such ports out from a range
    /// (`ip_local_port_range`, 32768–60999 by default), and the default port lies in it.
    static func portInUse(_ port: Int, host: String) -> String {
        guard port > 0, PortHolder.find(port: port) == nil, LocalProcess.connectionHolds(port: port) else {
            return "port \(port) on \(host) is already in use; pick another with --port"
        }
        let bounds = ((try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? "")
            .split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        let given =
            bounds.count == 2 && bounds[0] <= port && port <= bounds[1]
            ? " (the system gives out ports \(bounds[0])–\(bounds[1]) for them)" : ""
        return "port \(port) on \(host) is in use though nothing listens there: a connection this machine opened holds it as "
            + "its own end\(given), until it closes and about a minute after; try again later, pick another port with "
            + "--port, or, as root, add \(port) to net.ipv4.ip_local_reserved_ports so that the system keeps it"
    }
}

/// The hub's state file (`hub.json`), written once the server listens and rewritten when
/// what it says changes (the generation of the keys served).
final class StateFile: Sendable {
    let url: URL
    let logger: Logger
    /// The state written, or the changes made before it was (applied when it is).
    private let state = Mutex<(written: LocalHubState?, pending: [@Sendable (inout LocalHubState) -> Void])>((nil, []))

    init(url: URL, logger: Logger) {
        self.url = url
        self.logger = logger
    }

    func write(_ state: LocalHubState) {
        // Written under the lock, so that a later state is never overwritten by an earlier one.
        self.state.withLock { held in
            var state = state
            for change in held.pending { change(&state) }
            held = (state, [])
            save(state)
        }
    }

    /// Changes the state, and the file once it is written; a change that changes nothing
    /// leaves the file alone (clients and commands read it; nothing rewrites it needlessly).
    func update(_ change: @escaping @Sendable (inout LocalHubState) -> Void) {
        state.withLock { held in
            guard var state = held.written else {
                held.pending.append(change)
                return
            }
            change(&state)
            guard state != held.written else { return }
            held.written = state
            save(state)
        }
    }

    private func save(_ state: LocalHubState) {
        do {
            try state.write(to: url)
        } catch {
            logger.error("cannot write \(url.path): \(error)")
        }
    }
}

/// Stops a hub that `LocalHubServer.run` runs in this process, through the service group's
/// graceful shutdown: the server stops accepting, open requests finish, streams end, the
/// engine drains, and `run` returns.
public final class LocalHubShutdown: Sendable {
    private let state = Mutex<(group: ServiceGroup?, requested: Bool)>((nil, false))

    public init() {}

    /// Starts the shutdown; `run` returns once it is done. Before the hub runs, it is
    /// remembered.
    public func trigger() async {
        let group = state.withLock { state -> ServiceGroup? in
            state.requested = true
            return state.group
        }
        await group?.triggerGracefulShutdown()
    }

    func attach(_ group: ServiceGroup) async {
        let requested = state.withLock { state -> Bool in
            state.group = group
            return state.requested
        }
        if requested { await group.triggerGracefulShutdown() }
    }
}

/// The connection limits the server runs with, fitted to the process's descriptor limit.
struct ConnectionLimits {
    let connections: Int
    /// Three quarters of the connections: the rest stay for requests.
    var streams: Int { max(1, connections * 3 / 4) }
    let idleTimeout: TimeAmount
    let requestTimeout: TimeAmount

    /// Descriptors kept for the database, the files and the listening socket.
    static let reserve = 64

    init(configuration: LocalHubConfiguration, logger: Logger) {
        let available = Self.raiseDescriptorLimit()
        connections = max(1, min(configuration.maximumConnections, available - Self.reserve))
        if connections < configuration.maximumConnections {
            logger.warning(
                "serving at most \(connections) connections: the descriptor limit is \(available)")
        }
        idleTimeout = TimeAmount(Duration.seconds(configuration.idleTimeout))
        requestTimeout = TimeAmount(Duration.seconds(configuration.requestTimeout))
    }

    /// Raises the soft limit on open descriptors to the hard one; returns the limit now.
    static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
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
    let engine: HubEngine

    func run() async throws {
        try? await gracefulShutdown()
        engine.closeStreams()
    }
}

/// An exclusive lock on a data folder: one hub per folder. The kernel releases it when the
/// process ends, however it ends. A command that changes a stopped hub's files (`hub restore`)
/// holds it too, so no hub starts there meanwhile.
public final class DataDirectoryLock: Sendable {
    private let descriptor: Int32

    public init(directory: URL) throws {
        let path = directory.appendingPathComponent(LocalHubDefaults.lockFileName).path
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

    public func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
