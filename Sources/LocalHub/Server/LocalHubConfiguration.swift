import Foundation
import LocalHubSupport
import Logging
import NotificationHubs

/// How a local hub server runs.
public struct LocalHubConfiguration: Sendable {
    /// The fixed port clients look for the embedded hub on.
    public static let defaultPort = LocalHubDefaults.port
    /// The hub every terminal uses unless told otherwise.
    public static let defaultHubName = LocalHubDefaults.hubName

    public var host: String
    /// 0 picks a free port (tests).
    public var port: Int
    /// Folder of the database, keys, state file and certificate.
    public var dataDirectory: URL
    public var hubs: [String]
    /// Serve HTTPS with a self-signed certificate made beside the keys.
    public var tls: Bool
    public var logLevel: Logger.Level
    /// Time between `:keepalive` comments on idle device streams.
    public var keepAliveInterval: Duration
    /// Largest request body accepted (413 above).
    public var maximumBodyBytes: Int
    /// How far past `se` a token is still accepted.
    public var clockSkew: TimeInterval
    /// Seconds a connection may wait for a request's head, or sit idle between requests,
    /// before it is closed.
    public var idleTimeout: Double
    /// Seconds a request's body may take to arrive after its head (408 and close after);
    /// shorter than `idleTimeout`, so a stalled body is answered before the connection is cut.
    public var requestTimeout: Double
    /// Connections served at once; more wait in the listen queue. Clipped to what the
    /// process's descriptor limit allows, with room kept for the database and files.
    public var maximumConnections: Int
    /// Device streams open at once for one device (429 above).
    public var maximumStreamsPerDevice: Int
    /// Installations one hub holds, and legacy registrations one hub holds (403 above).
    public var maximumInstallationsPerHub: Int
    /// Bytes the strings of one hub's installations and registrations may take in all (403
    /// above): what bounds the memory a hub needs, whoever registers.
    public var maximumBytesPerHub: Int
    /// The push services' credentials (`PushCredentials`): this file when given, else the
    /// data folder's `providers.json` when there is one; without, every hub delivers only
    /// through the built-in push service.
    public var providersFile: URL?
    /// A PostgreSQL database (`postgres://user@host:port/database`) several nodes share;
    /// nil for the SQLite database in the data folder.
    public var storeURL: String?
    /// This node's name in logs, claims and `/metrics`; made from the host and process when nil.
    public var nodeName: String?
    /// The database password, kept out of `storeURL` (from a file or the environment).
    public var storePassword: String?
    /// What one client may do (`ClientRates`); tests and benchmarks raise it.
    public var clientRates: ClientRates
    /// How long a claim of the built-in push service holds unused (`HubEngine.claimLifetime`).
    public var claimLifetime: Duration = .seconds(7 * 86_400)
    /// How soon an installation must follow a claim made into the claim table's last quarter
    /// (`ClaimKeeper.reserveWindow`).
    public var claimReserveWindow: Duration = .seconds(60)
    /// What the hub keeps and for how long (`--retention`, `--delivery-log-megabytes`,
    /// `--installation-ttl`).
    public var retention: RetentionPolicy = .standard
    /// Proxies whose `X-Forwarded-For` names the client (nginx in front of nodes).
    public var trustedProxies: TrustedProxies
    /// The bearer token `/metrics` asks of a peer that is not this machine or came through a
    /// proxy; nil: such peers get no metrics.
    public var metricsToken: String?

    public init(
        host: String = "127.0.0.1", port: Int = LocalHubConfiguration.defaultPort, dataDirectory: URL,
        hubs: [String] = [LocalHubConfiguration.defaultHubName], tls: Bool = false, logLevel: Logger.Level = .info,
        keepAliveInterval: Duration = .seconds(15), maximumBodyBytes: Int = 64 * 1024, clockSkew: TimeInterval = 30,
        idleTimeout: Double = 30, requestTimeout: Double = 20, maximumConnections: Int = 4096,
        maximumStreamsPerDevice: Int = 16, maximumInstallationsPerHub: Int = 100_000, maximumBytesPerHub: Int = 256 << 20,
        providersFile: URL? = nil, storeURL: String? = nil, nodeName: String? = nil, clientRates: ClientRates = ClientRates(),
        trustedProxies: TrustedProxies = .none, metricsToken: String? = nil
    ) {
        self.clientRates = clientRates
        self.trustedProxies = trustedProxies
        self.metricsToken = metricsToken
        self.providersFile = providersFile
        self.storeURL = storeURL
        self.nodeName = nodeName
        self.maximumBytesPerHub = maximumBytesPerHub
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.maximumConnections = maximumConnections
        self.maximumStreamsPerDevice = maximumStreamsPerDevice
        self.maximumInstallationsPerHub = maximumInstallationsPerHub
        self.host = host
        self.port = port
        self.dataDirectory = dataDirectory
        self.hubs = hubs
        self.tls = tls
        self.logLevel = logLevel
        self.keepAliveInterval = keepAliveInterval
        self.maximumBodyBytes = maximumBodyBytes
        self.clockSkew = clockSkew
    }

    public var databaseURL: URL { dataDirectory.appendingPathComponent("hub.sqlite") }

    /// The node name used: the one given, else host name and process id.
    public var effectiveNodeName: String {
        nodeName ?? "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// The providers file this hub reads, if any.
    public var effectiveProvidersFile: URL? {
        if let providersFile { return providersFile }
        let inFolder = dataDirectory.appendingPathComponent(PushCredentials.fileName)
        return FileManager.default.fileExists(atPath: inFolder.path) ? inFolder : nil
    }
    public var stateURL: URL { dataDirectory.appendingPathComponent(LocalHubState.fileName) }
}
