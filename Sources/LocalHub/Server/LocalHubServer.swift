import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import LocalHubSupport
import Logging
import NIOCore
import NotificationHubs
import ServiceLifecycle

/// The local hub server: the HTTP front, the engine, the store, the keys, and the state
/// file clients find it by. One way to put a hub together (`buildApplication`), which
/// `hub serve` and the tests' hubs run alike (`run`).
public enum LocalHubServer {
    /// Runs until SIGTERM or SIGINT, until `shutdown` is triggered, or until cancelled; every
    /// way but cancellation drains the server gracefully. `onReady` is called with the state
    /// once the server listens; the state file is written at the same moment and removed on
    /// exit. The data folder is locked meanwhile: one hub per folder.
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
        let postgres = try makePostgres(configuration, logger: logger)
        // A shared store's pool runs around the services: the keys the nodes share are read
        // from the database before the application can be made, and the pool stops after
        // every service that uses it.
        try await whileRunning(postgres) {
            let hub = try await buildApplication(
                configuration: configuration, postgres: postgres, logger: logger, onReady: onReady)
            defer { hub.stateFile.removeIfOurs() }
            let group = hub.serviceGroup(handleSignals: handleSignals, logger: logger)
            await shutdown.attach(group)
            do {
                try await group.run()
            } catch let error as IOError where error.errnoCode == EADDRINUSE {
                throw LocalHubStartError(description: Self.portInUse(configuration.port, host: configuration.host))
            }
        }
    }

    /// `body`, with `store`'s pool running while it runs (`PostgresHubStore.whileRunning`);
    /// `body` alone when there is no shared store.
    private static func whileRunning<T>(_ store: PostgresHubStore?, _ body: () async throws -> T) async throws -> T {
        guard let store else { return try await body() }
        return try await store.whileRunning(body)
    }

    /// The shared store `configuration` names, not yet running (`run` runs its pool), or nil
    /// for the data folder's SQLite database.
    private static func makePostgres(_ configuration: LocalHubConfiguration, logger: Logger) throws -> PostgresHubStore? {
        guard let url = configuration.storeURL else { return nil }
        do {
            return try PostgresHubStore(
                url: url, password: configuration.storePassword, node: configuration.effectiveNodeName, logger: logger)
        } catch {
            throw databaseProblem(error, url: url)
        }
    }

    /// Puts a hub together as `configuration` says, in a data folder this process holds the
    /// lock of: its keys, its store, the push services, the engine, and the HTTP application
    /// on the engine's routes, returned with the services the hub runs as. Nothing runs until
    /// they do: the engine starts as a service, before the server listens; the state file is
    /// written once it does (`onReady` is called then).
    static func buildApplication(
        configuration: LocalHubConfiguration, postgres: PostgresHubStore?, logger: Logger,
        onReady: @escaping @Sendable (LocalHubState) -> Void = { _ in }
    ) async throws -> AssembledHub {
        var keys = try HubKeys.loadOrCreate(in: configuration.dataDirectory, hubs: configuration.hubs)
        let store = try await openStore(configuration, postgres: postgres, keys: &keys)
        do {
            try DataFolder.prepare(configuration.dataDirectory, files: LocalHubDefaults.dataFiles)
            let providers: ExternalPushServices
            do {
                providers = try await ExternalPushServices.load(
                    configuration.effectiveProvidersFile, hubs: configuration.hubs, logger: logger)
            } catch {
                throw LocalHubStartError(description: error.description)
            }
            return try assemble(
                configuration: configuration, store: store, keys: keys, providers: providers, logger: logger,
                onReady: onReady)
        } catch {
            // Nothing runs yet: what was opened closes here.
            (store as? any SharedHubStore)?.shutdown()
            throw error
        }
    }

    /// The store `configuration` names, opened: a shared PostgreSQL database (its pool
    /// running), whose keys every node serves (the data folder keeps a copy, which the
    /// command line reads), or the data folder's SQLite database.
    private static func openStore(_ configuration: LocalHubConfiguration, postgres: PostgresHubStore?, keys: inout HubKeys)
        async throws -> any HubStore
    {
        guard let postgres, let url = configuration.storeURL else {
            return try SQLiteHubStore(path: configuration.databaseURL.path)
        }
        do {
            try await postgres.open()
            keys = try await keys.sharing(through: postgres, in: configuration.dataDirectory)
        } catch {
            postgres.shutdown()
            throw databaseProblem(error, url: url)
        }
        return postgres
    }

    /// What a start that met the database at `url` failing says: why, and where (redacted),
    /// as a `DatabaseProblem` whose kind the command's exit code tells.
    private static func databaseProblem(_ error: any Error, url: String) -> any Error {
        switch error {
        case let problem as DatabaseProblem:
            problem
        case let error as StoreUnavailable:
            DatabaseProblem(.unreachable, "cannot reach the database at \(PostgresHubStore.redacted(url)): \(error)")
        case let error as StoreFailure:
            DatabaseProblem(.unusable, "cannot use the database at \(PostgresHubStore.redacted(url)): \(error)")
        default: error
        }
    }

    /// The engine on `store` and its routes (`HubApplication`), the HTTP application serving
    /// them, and the services the hub runs as, in the order they start.
    private static func assemble(
        configuration: LocalHubConfiguration, store: any HubStore, keys: HubKeys, providers: ExternalPushServices,
        logger: Logger, onReady: @escaping @Sendable (LocalHubState) -> Void
    ) throws -> AssembledHub {
        let limits = ConnectionLimits(configuration: configuration, logger: logger)
        let secret = LocalHubProof.makeSecret()
        let hub = HubApplication(
            store: store, configuration: configuration, keys: keys, secret: secret, maximumStreams: limits.streams,
            pushServices: providers.services, logger: logger)
        let engine = EngineService(engine: hub.engine)
        let stateFile = StateFile(url: configuration.stateURL, logger: logger)
        var application = try hub.httpApplication(
            configuration: configuration, limits: limits, secret: secret, stateFile: stateFile, logger: logger,
            onReady: onReady)
        application.beforeServerStarts { try await engine.waitUntilStarted() }
        let services: [any Service] =
            storeServices(store) + [
                PushProvidersService(providers: providers), engine, application, StreamCloser(engine: hub.engine),
                hub.keyWatcher(store: store, directory: configuration.dataDirectory, stateFile: stateFile, logger: logger),
            ]
        return AssembledHub(engine: hub.engine, stateFile: stateFile, services: services)
    }

    /// The store's own services, first in the group so that they stop last, after everything
    /// that uses the store: where a store that runs as a service (a client's `run()`) adds
    /// itself. Today a shared store's connections, closed at the end.
    static func storeServices(_ store: any HubStore) -> [any Service] {
        guard let shared = store as? any SharedHubStore else { return [] }
        return [SharedStoreShutdown(store: shared)]
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
