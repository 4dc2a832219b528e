import Logging

extension HubEngine {
    /// An engine on `store` set up as `configuration` says: the one way a hub makes its
    /// engine, for the server and for the tests that drive its routes in process.
    /// - Parameters:
    ///   - maximumStreams: device streams open at once (`ConnectionLimits.streams`).
    ///   - pushServices: the real push services (`PushProviders`), besides the built-in one.
    convenience init(
        store: any HubStore, configuration: LocalHubConfiguration, maximumStreams: Int,
        pushServices: [any PushService] = [], logger: Logger
    ) {
        self.init(
            store: store, hubs: configuration.hubs, keepAliveInterval: configuration.keepAliveInterval,
            maximumInstallationsPerHub: configuration.maximumInstallationsPerHub,
            maximumBytesPerHub: configuration.maximumBytesPerHub,
            maximumStreamsPerDevice: configuration.maximumStreamsPerDevice, maximumStreams: maximumStreams,
            maximumStreamsPerClient: configuration.clientRates.streams, pushServices: pushServices,
            claimLifetime: configuration.claimLifetime, retention: configuration.retention, logger: logger)
    }
}
