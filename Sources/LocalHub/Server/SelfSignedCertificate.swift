import Foundation
import LocalHubSupport
import NIOSSL
import NotificationHubs

/// A self-signed certificate for `localhost` and `127.0.0.1`, made once beside the keys with
/// the `openssl` command, for clients that insist on https.
public enum SelfSignedCertificate {
    public static let certificateFile = "tls-certificate.pem"
    public static let keyFile = "tls-key.pem"

    /// Loads the certificate and key from `directory`, making them first if needed.
    public static func serverConfiguration(in directory: URL) throws -> TLSConfiguration {
        let certificateURL = directory.appendingPathComponent(certificateFile)
        let keyURL = directory.appendingPathComponent(keyFile)
        if !FileManager.default.fileExists(atPath: certificateURL.path) || !FileManager.default.fileExists(atPath: keyURL.path) {
            try make(certificate: certificateURL, key: keyURL)
        }
        let certificates = try NIOSSLCertificate.fromPEMFile(certificateURL.path)
        let key = try NIOSSLPrivateKey(file: keyURL.path, format: .pem)
        return TLSConfiguration.makeServerConfiguration(
            certificateChain: certificates.map { .certificate($0) }, privateKey: .privateKey(key))
    }

    /// A new P-256 key (mode 0600) and a certificate valid for ten years.
    static func make(certificate: URL, key: URL) throws {
        guard
            let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl", "/bin/openssl"].first(
                where: FileManager.default.isExecutableFile(atPath:))
        else {
            throw LocalHubStartError(
                description: "--tls needs the openssl command to make its certificate (apt-get install openssl)")
        }
        let temporaryKey = key.deletingLastPathComponent().appendingPathComponent(
            ".tls-key-\(ProcessInfo.processInfo.processIdentifier).pem")
        let status = try? ChildProcess.run([
            openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "3650",
            "-subj", "/CN=localhost/O=Breaking News local hub", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-addext", "extendedKeyUsage=serverAuth", "-keyout", temporaryKey.path, "-out", certificate.path,
        ])
        guard status == 0, let keyData = try? Data(contentsOf: temporaryKey) else {
            try? FileManager.default.removeItem(at: temporaryKey)
            throw LocalHubStartError(
                description: "openssl could not make the TLS certificate (status \(status.map(String.init) ?? "not started"))")
        }
        try? FileManager.default.removeItem(at: temporaryKey)
        try AtomicFile.write(keyData, to: key, permissions: 0o600)
    }
}
