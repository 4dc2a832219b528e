import Logging
import ServiceLifecycle

/// A hub put together by `LocalHubServer.buildApplication`: the services it runs as, the
/// HTTP application among them, in the order they start; they stop in the reverse order, so
/// the store stops last, then the push services, then the engine, after the server has
/// drained, which it does after the streams are closed.
struct AssembledHub: Sendable {
    /// The engine the application serves.
    let engine: HubEngine
    /// What the state file says once the server listens (`hub.json`), removed at the end.
    let stateFile: StateFile
    let services: [any Service]

    /// The group the hub runs in; with `handleSignals`, SIGTERM and SIGINT start its graceful
    /// shutdown.
    func serviceGroup(handleSignals: Bool, logger: Logger) -> ServiceGroup {
        ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
                gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [], logger: logger))
    }
}
