import AsyncHTTPClient
import NIOSSL

/// How FCM's and Web Push's clients talk HTTP (APNs has an HTTP/2 connection of its own,
/// `HTTP2Connection`): TLS trusting the credential's CA file besides the system's, HTTP/2 when
/// the service offers it, 10 s to connect, 30 s to read.
enum ProviderHTTP {
    static func client(trusting caFile: String?) -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.timeout.connect = .seconds(10)
        configuration.timeout.read = .seconds(30)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}
