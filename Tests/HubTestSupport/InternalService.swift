import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTLS
import LocalHubSupport
import Logging
import NIOCore
import NIOSSL
import Synchronization
import TestTiers

/// What a hub must never reach on behalf of a stranger: an HTTPS service inside the machine,
/// on one port of both loopbacks (127.0.0.1 and ::1), with a certificate that names every
/// spelling of them (`localhost`, 127.0.0.1, ::1, 0.0.0.0, ::) so that a request that gets
/// this far is a whole request, seen and recorded. Answers as told: a secret in the body, or
/// a redirect elsewhere.
public final class InternalService: Sendable {
    /// How it answers every request.
    public enum Answer: Sendable {
        /// `status` with `body`.
        case text(status: Int, body: String)
        /// `status` (301, 302, 307, 308) with `Location: location`.
        case redirect(status: Int, location: String)
        /// 200 at once, then a body of `bytes` one byte each `every` (a slow reader's trap).
        case trickle(bytes: Int, every: Duration)
    }

    /// One request as received.
    public struct Seen: Sendable {
        public let method: String
        public let path: String
        public let body: [UInt8]
    }

    private let answer: Answer
    private let seen = Mutex<[Seen]>([])
    private let folder: URL

    public init(_ answer: Answer) {
        self.answer = answer
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("internal-\(UUID().uuidString)")
    }

    /// Every request so far.
    public var requests: [Seen] { seen.withLock { $0 } }

    /// The certificate a client must trust to reach it.
    public var certificateFile: String { folder.appendingPathComponent("cert.pem").path }

    /// Serves while `body` runs, given the port (the same on 127.0.0.1 and ::1); then stops.
    public func serve<T>(_ body: (Int) async throws -> T) async throws -> T {
        try TestTier.requireFullSuite("a server on a socket")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let key = folder.appendingPathComponent("key.pem")
        let status = try ChildProcess.run([
            "/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-days", "2", "-subj", "/CN=localhost", "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1,IP:0.0.0.0,IP:::", "-keyout", key.path, "-out",
            certificateFile,
        ])
        guard status == 0 else { throw TestHubError(description: "openssl could not make a certificate") }
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: key.path, format: .pem)))
        let router = Router()
        router.on("**", method: .get) { request, _ in try await self.respond(request) }
        router.on("**", method: .post) { request, _ in try await self.respond(request) }
        router.on("/", method: .post) { request, _ in try await self.respond(request) }
        // A port free on both loopbacks: IPv4 picks it, IPv6 must get it too (tried again if not).
        for _ in 0..<20 {
            let (ready, continuation) = AsyncStream<Int>.makeStream()
            var logger = Logger(label: "internal-service")
            logger.logLevel = .critical
            let v4 = Application(
                router: router, server: try .tls(.http1(), tlsConfiguration: tls),
                configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
            let outcome: T? = try await withService(v4) {
                var iterator = ready.makeAsyncIterator()
                let port = await iterator.next() ?? 0
                guard LoopbackPort.isFree(port, ipv6: true) else { return nil }
                let v6 = Application(
                    router: router, server: try .tls(.http1(), tlsConfiguration: tls),
                    configuration: ApplicationConfiguration(address: .hostname("::1", port: port)), logger: logger)
                return try await withService(v6) {
                    // Until the IPv6 side listens.
                    for _ in 0..<200 where LoopbackPort.isFree(port, ipv6: true) {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    return try await body(port)
                }
            }
            if let outcome { return outcome }
        }
        throw TestHubError(description: "no port free on both loopbacks")
    }

    private func respond(_ request: Request) async throws -> Response {
        let body = Array((try await request.body.collect(upTo: 1 << 20)).readableBytesView)
        seen.withLock { $0.append(Seen(method: request.method.rawValue, path: request.uri.path, body: body)) }
        switch answer {
        case .text(let status, let text):
            return Response(
                status: .init(code: status), headers: [.contentType: "text/plain"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        case .redirect(let status, let location):
            return Response(status: .init(code: status), headers: [.location: location])
        case .trickle(let bytes, let every):
            return Response(
                status: .ok, headers: [.contentLength: String(bytes)],
                body: ResponseBody { writer in
                    for _ in 0..<bytes {
                        try await writer.write(ByteBuffer(string: "x"))
                        try await Task.sleep(for: every)
                    }
                    try await writer.finish(nil)
                })
        }
    }
}
