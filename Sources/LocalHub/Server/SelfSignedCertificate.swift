import Crypto
import Foundation
import NIOSSL
import NotificationHubs
import SwiftASN1
import X509

/// A self-signed certificate for `localhost` and `127.0.0.1`, made once beside the keys, for
/// clients that insist on https.
enum SelfSignedCertificate {
    static let certificateFile = "tls-certificate.pem"
    static let keyFile = "tls-key.pem"

    /// Loads the certificate and key from `directory`, making them first if needed.
    static func serverConfiguration(in directory: URL) throws -> TLSConfiguration {
        let certificateURL = directory.appendingPathComponent(certificateFile)
        let keyURL = directory.appendingPathComponent(keyFile)
        if !FileManager.default.fileExists(atPath: certificateURL.path) || !FileManager.default.fileExists(atPath: keyURL.path) {
            let (certificatePEM, keyPEM) = try make()
            try AtomicFile.write(Data(keyPEM.utf8), to: keyURL, permissions: 0o600)
            try AtomicFile.write(Data(certificatePEM.utf8), to: certificateURL, permissions: 0o644)
        }
        let certificates = try NIOSSLCertificate.fromPEMFile(certificateURL.path)
        let key = try NIOSSLPrivateKey(file: keyURL.path, format: .pem)
        return TLSConfiguration.makeServerConfiguration(
            certificateChain: certificates.map { .certificate($0) }, privateKey: .privateKey(key))
    }

    /// A new P-256 key and a certificate valid for ten years.
    static func make() throws -> (certificate: String, key: String) {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            CommonName("localhost")
            OrganizationName("Breaking News local hub")
        }
        let now = Date()
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            KeyUsage(digitalSignature: true, keyEncipherment: true)
            try ExtendedKeyUsage([.serverAuth])
            SubjectAlternativeNames([.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86_400), issuer: name,
            subject: name, signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions,
            issuerPrivateKey: Certificate.PrivateKey(key))
        return (try certificate.serializeAsPEM().pemString, key.pemRepresentation)
    }
}
