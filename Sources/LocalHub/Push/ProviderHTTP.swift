import AsyncHTTPClient
import NIOSSL

/// The one way the real push services' clients talk HTTP: TLS trusting the credential's CA
/// file besides the system's, HTTP/2 when the service offers it (APNs does, and then one
/// connection is multiplexed), 10 s to connect, 30 s to read.
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
