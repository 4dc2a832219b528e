import Foundation

extension HubEngine {
    /// How an engine runs: what its hubs may hold, the device streams it serves, and what it
    /// keeps for how long. The server makes one from `LocalHubConfiguration`; a test states
    /// only what it is about.
    public struct Configuration: Sendable {
        /// The hubs served.
        public var hubs: [String]
        /// Devices a test send reaches at most, as on the service.
        public var testSendLimit: Int = 10
        /// Time between keep-alive comments on idle device streams.
        public var keepAliveInterval: Duration = .seconds(15)
        /// Installations, and legacy registrations, one hub may hold (`HubWriter.Limits`).
        public var maximumInstallationsPerHub: Int = 100_000
        /// Bytes the strings of one hub's installations and registrations may take in all.
        public var maximumBytesPerHub: Int = 256 << 20
        /// Device streams open at once for one device.
        public var maximumStreamsPerDevice: Int = 16
        /// Device streams open at once in all (`ConnectionLimits.streams`).
        public var maximumStreams: Int = .max
        /// Device streams one client may hold open; 0: no limit.
        public var maximumStreamsPerClient: Int = 0
        /// How long a claim of the built-in push service holds unused (`ClaimKeeper`).
        public var claimLifetime: Duration = .seconds(7 * 86_400)
        /// How soon an installation must follow a claim made into the table's last quarter.
        public var claimReserveWindow: Duration = .seconds(60)
        /// What the hub keeps, and for how long.
        public var retention: RetentionPolicy = .standard

        public init(hubs: [String]) { self.hubs = hubs }

        /// What `configure` makes of the defaults for `hubs`.
        public init(hubs: [String], _ configure: (inout Configuration) -> Void) {
            self.init(hubs: hubs)
            configure(&self)
        }
    }
}
