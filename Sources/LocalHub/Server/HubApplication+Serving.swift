import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import LocalHubSupport
import Logging
import NIOCore
import NotificationHubs

extension HubApplication {
    /// The HTTP application that serves this hub's routes on the configured address: HTTP/1
    /// (with TLS when configured) behind the per-client connection limit and the body
    /// deadline. Once it listens, the state file is written and `onReady` called.
    func httpApplication(
        configuration: LocalHubConfiguration, limits: ConnectionLimits, secret: String, stateFile: StateFile,
        logger: Logger, onReady: @escaping @Sendable (LocalHubState) -> Void
    ) throws -> Application<RouterResponder<HubRequestContext>> {
        let perClient = ClientConnections(
            limit: configuration.clientRates.connections, trusted: configuration.trustedProxies)
        let channel = HTTP1Channel.Configuration(
            additionalChannelHandlers: [
                ClientConnectionHandler(perClient), BodyDeadlineHandler(timeout: limits.requestTimeout),
            ],
            idleTimeout: limits.idleTimeout,
            httpDecoderConfiguration: .init(maxHeaderFieldSize: 16 * 1024, maxHeaderListSize: 64 * 1024, maxHeaderFieldCount: 100)
        )
        let server: HTTPServerBuilder =
            configuration.tls
            ? try .tls(
                .http1(configuration: channel),
                tlsConfiguration: SelfSignedCertificate.serverConfiguration(in: configuration.dataDirectory))
            : .http1(configuration: channel)
        let keyRing = self.keyRing
        return Application(
            responder: router().buildResponder(),
            server: server,
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port), serverName: "LocalNotificationHub",
                backlog: 1024, availableConnectionsDelegate: MaximumAvailableConnections(limits.connections, logger: logger)),
            onServerRunning: { channel in
                let state = Self.state(
                    listeningOn: channel.localAddress?.port ?? configuration.port, configuration: configuration,
                    secret: secret, keysGeneration: keyRing.keys.generation)
                stateFile.write(state)
                logger.info("local hub listening on \(state.url), hubs: \(configuration.hubs.joined(separator: ", "))")
                onReady(state)
            },
            logger: logger
        )
    }

    /// What the state file says of a hub listening on `port`.
    static func state(listeningOn port: Int, configuration: LocalHubConfiguration, secret: String, keysGeneration: Int64)
        -> LocalHubState
    {
        let host = configuration.host == "0.0.0.0" ? "127.0.0.1" : configuration.host
        return LocalHubState(
            pid: ProcessInfo.processInfo.processIdentifier, url: "\(configuration.tls ? "https" : "http")://\(host):\(port)",
            hubs: configuration.hubs, tls: configuration.tls, started: W3CDate.format(Date()), secret: secret,
            retention: configuration.retention.age, deliveryLogBytes: configuration.retention.maximumLogBytes,
            keysGeneration: keysGeneration, node: configuration.storeURL == nil ? nil : configuration.effectiveNodeName)
    }

    /// Follows the keys as they change (the data folder's file, or a shared store's), puts
    /// them in the ring, and notes the generation served in the state file and the store.
    func keyWatcher(store: any HubStore, directory: URL, stateFile: StateFile, logger: Logger) -> KeyWatcher {
        let shared = store as? any SharedHubStore
        return KeyWatcher(
            ring: keyRing, streams: engine.deliveries.streams,
            source: shared.map { .shared($0, directory) } ?? .folder(directory),
            logger: logger,
            acknowledge: { generation in
                stateFile.update { $0.keysGeneration = max($0.keysGeneration ?? 0, generation) }
                guard let shared else { return }
                do {
                    try await shared.noteKeysGeneration(generation, now: Date())
                } catch {
                    logger.warning("cannot note in the database the keys this node serves: \(error)")
                }
            })
    }
}
