import Hummingbird
import Logging

/// A hub as the server serves it, short of the listener: the engine on a store, set up from
/// the configuration, and the route table on it, middleware and all. The one way a hub is put
/// together: `LocalHubServer.buildApplication` serves its router behind a socket
/// (`httpApplication`), and the tests of HTTP behaviour send requests to the same router in
/// process (`RouterHub`).
struct HubApplication: Sendable {
    let engine: HubEngine
    /// The keys served, replaced while the hub runs (`KeyWatcher`).
    let keyRing: KeyRing
    private let responder: HubResponder

    /// - Parameters:
    ///   - secret: this start's secret, with which `/healthz` proves it is the hub of its folder.
    ///   - maximumStreams: device streams open at once (`ConnectionLimits.streams`).
    ///   - pushServices: the real push services, besides the built-in one.
    init(
        store: any HubStore, configuration: LocalHubConfiguration, keys: HubKeys, secret: String, maximumStreams: Int,
        pushServices: [any PushService] = [], logger: Logger
    ) {
        engine = HubEngine(
            store: store, configuration: configuration.engineConfiguration(maximumStreams: maximumStreams),
            pushServices: pushServices, logger: logger)
        keyRing = KeyRing(keys: keys, hubs: configuration.hubs, clockSkew: configuration.clockSkew)
        responder = HubResponder(engine: engine, keyRing: keyRing, configuration: configuration, secret: secret)
    }

    /// The route table the hub answers with.
    func router() -> Router<HubRequestContext> { responder.router() }
}
