import AsyncHTTPClient
import NIOSSL

/// How FCM's and Web Push's clients talk HTTP (APNs has an HTTP/2 connection of its own,
/// `HTTP2Connection`): TLS trusting the credential's CA file besides the system's, HTTP/2 when
/// the service offers it, 10 s to connect, 30 s to read, and never a redirect (a push service
/// answers; one that sends the hub elsewhere is refused, not followed).
enum PushHTTP {
    /// `dnsOverride`: names and the address each must connect to (`WebPushOrigins`).
    static func client(
        trusting caFile: String?, dnsOverride: [String: String] = [:], connectTimeout: Int64 = 10,
        connectionsPerHost: Int = 8
    ) -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow)
        configuration.httpVersion = .automatic
        configuration.timeout.connect = .seconds(connectTimeout)
        configuration.timeout.read = .seconds(30)
        configuration.dnsOverride = dnsOverride
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}

extension PushHTTP {
    /// What a deadline ends: the operation was still running when its time was up.
    struct DeadlinePassed: Error {}

    /// Runs `operation`, giving up (and cancelling it) at `deadline`: what bounds a request
    /// whose answer trickles in after its head (AsyncHTTPClient's deadline ends at the head).
    static func before<T: Sendable>(_ deadline: ContinuousClock.Instant, _ operation: @escaping @Sendable () async throws -> T)
        async throws -> T
    {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await Task.sleep(until: deadline, clock: .continuous)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else { throw DeadlinePassed() }
            return value
        }
    }
}
