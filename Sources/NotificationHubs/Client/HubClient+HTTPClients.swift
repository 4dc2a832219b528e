import AsyncHTTPClient
import NIOCore
import Synchronization

/// The HTTP clients hub calls share, and how many calls each may have in flight.
extension HubClient {
    /// The HTTP client hub calls use by default: a refused connection fails at once (the
    /// retry policy, not the pool, decides about retries) and connecting gives up after 5 s.
    public static let sharedHTTPClient = makeSharedClient(readTimeout: nil)

    /// The HTTP client device streams use where calls use `sharedHTTPClient`: the same
    /// settings, and a read timeout of three of the hub's keep-alive intervals (15 s each).
    public static let streamHTTPClient = makeSharedClient(readTimeout: streamSilence)

    private static func makeSharedClient(readTimeout: TimeAmount?) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 16
        configuration.timeout.connect = .seconds(5)
        configuration.timeout.read = readTimeout
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// How long a device stream may bring nothing, not even a keep-alive, before it is
    /// taken for cut.
    public static let streamSilence = TimeAmount.seconds(45)

    /// Calls in flight at once per HTTP client and namespace: no more than the client's pool
    /// opens connections to one host (16 for the shared client, AsyncHTTPClient's default 8
    /// otherwise). More calls wait here, before they are timed: in the pool, a request's wait
    /// for a connection counts against the connect timeout, and a burst of sends to a busy
    /// hub failed as "connection timed out" though the hub answered every one it was given.
    static func gate(http: HTTPClient, root: String) -> StreamLimit {
        let key = "\(ObjectIdentifier(http).hashValue) \(root)"
        return gates.withLock { gates in
            if let gate = gates[key] { return gate }
            let gate = StreamLimit(http === sharedHTTPClient ? 16 : 8)
            gates[key] = gate
            return gate
        }
    }

    private static let gates = Mutex<[String: StreamLimit]>([:])
}
