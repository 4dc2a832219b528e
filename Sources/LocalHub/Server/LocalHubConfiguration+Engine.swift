extension LocalHubConfiguration {
    /// The engine's part of this configuration: the one way a hub configures its engine, for
    /// the server and for the tests that drive its routes in process.
    /// - Parameter maximumStreams: device streams open at once (`ConnectionLimits.streams`).
    func engineConfiguration(maximumStreams: Int) -> HubEngine.Configuration {
        HubEngine.Configuration(hubs: hubs) { engine in
            engine.keepAliveInterval = keepAliveInterval
            engine.maximumInstallationsPerHub = maximumInstallationsPerHub
            engine.maximumBytesPerHub = maximumBytesPerHub
            engine.maximumStreamsPerDevice = maximumStreamsPerDevice
            engine.maximumStreams = maximumStreams
            engine.maximumStreamsPerClient = clientRates.streams
            engine.claimLifetime = claimLifetime
            engine.claimReserveWindow = claimReserveWindow
            engine.retention = retention
        }
    }
}
