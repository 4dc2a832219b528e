import Foundation
import Hummingbird
import HummingbirdHTTP2
import LocalHub
import Logging
import TestTiers

/// Serves `router` over HTTP/2 and TLS on a loopback port, with a self-signed certificate
/// made in `folder` (removed after), while `body` runs with the base URL
/// (`https://127.0.0.1:PORT`); then stops gracefully. The loopback push services' one server.
func serveOverTLS<T>(
    _ router: Router<BasicRequestContext>, folder: URL, label: String, idleTimeout: Duration? = nil,
    _ body: (String) async throws -> T
) async throws -> T {
    try TestTier.requireFullSuite("a push service peer on a socket (\(label))")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let tls = try SelfSignedCertificate.serverConfiguration(in: folder)
    let (ready, continuation) = AsyncStream<Int>.makeStream()
    var logger = Logger(label: label)
    logger.logLevel = .critical
    let app = Application(
        router: router, server: try .http2Upgrade(tlsConfiguration: tls, configuration: .init(idleTimeout: idleTimeout)),
        configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
    return try await withService(app) {
        var iterator = ready.makeAsyncIterator()
        return try await body("https://127.0.0.1:\(await iterator.next() ?? 0)")
    }
}
