import Crypto
import Foundation
import LocalHubSupport
import NotificationHubs
import Testing

@testable import LocalHub

/// The APNs provider token (issue 14, wire spec §11.3): an ES256 JWT APNs can verify with
/// the key's public half, reused for 50 minutes, made early only once after APNs called it
/// expired.
struct APNsProviderTokenTests {
    static let start = Date(timeIntervalSince1970: 1_795_000_000)

    static func maker(_ key: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) throws -> APNsProviderToken {
        try APNsProviderToken(key: key.pemRepresentation, keyId: "ABC123DEFG", teamId: "DEF123GHIJ")
    }

    /// The header and claims as JSON objects, and whether the signature verifies.
    static func open(_ token: String, with key: P256.Signing.PublicKey) throws -> (
        header: [String: Any], claims: [String: Any], verified: Bool
    ) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        let header = try #require(Base64URL.decode(parts[0]))
        let claims = try #require(Base64URL.decode(parts[1]))
        let signature = try #require(Base64URL.decode(parts[2]))
        // Raw R‖S, 64 bytes: a DER signature (70–72 bytes) does not parse here.
        let parsed = try P256.Signing.ECDSASignature(rawRepresentation: signature)
        let verified = key.isValidSignature(parsed, for: Array((parts[0] + "." + parts[1]).utf8))
        return (
            try #require(try JSONSerialization.jsonObject(with: Data(header)) as? [String: Any]),
            try #require(try JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any]), verified
        )
    }

    @Test func aTokenIsAnES256JWTTheKeysPublicHalfVerifies() throws {
        let key = P256.Signing.PrivateKey()
        let token = try Self.maker(key).token(now: Self.start)
        let (header, claims, verified) = try Self.open(token, with: key.publicKey)
        #expect(verified)
        #expect(header["alg"] as? String == "ES256" && header["kid"] as? String == "ABC123DEFG" && header.count == 2)
        #expect(claims["iss"] as? String == "DEF123GHIJ" && claims.count == 2)
        #expect((claims["iat"] as? NSNumber)?.int64Value == 1_795_000_000)
        #expect(!token.contains("=") && !token.contains("+") && !token.contains("/"))
        // Another key's public half does not verify it.
        #expect(try !Self.open(token, with: P256.Signing.PrivateKey().publicKey).verified)
    }

    @Test func aTokenIsReusedForFiftyMinutesThenMadeAnew() throws {
        let maker = try Self.maker()
        let first = maker.token(now: Self.start)
        #expect(maker.token(now: Self.start + 49 * 60 + 59) == first)
        let second = maker.token(now: Self.start + 50 * 60)
        #expect(second != first)
        #expect(maker.token(now: Self.start + 60 * 60) == second)
        // A clock that went back does not keep a token from the future.
        #expect(maker.token(now: Self.start) != second)
    }

    @Test func anExpiredAnswerRenewsOnceNotAgain() throws {
        let maker = try Self.maker()
        let first = maker.token(now: Self.start)
        #expect(maker.expired(first, now: Self.start + 60))
        let early = maker.token(now: Self.start + 61)
        #expect(early != first)
        // The early token called expired too: no second early renewal (APNs would answer 429).
        #expect(!maker.expired(early, now: Self.start + 120))
        #expect(maker.token(now: Self.start + 121) == early)
        // An answer about a token already replaced: try again with the current one, unchanged.
        #expect(maker.expired(first, now: Self.start + 130))
        #expect(maker.token(now: Self.start + 131) == early)
        // The regular renewal comes 50 minutes after the early one, and may be renewed early again.
        let regular = maker.token(now: Self.start + 60 + 50 * 60)
        #expect(regular != early)
        #expect(maker.expired(regular, now: Self.start + 60 + 50 * 60 + 1))
    }

    @Test func theKeyMayBePEMOrTheBareBodyAndIdsAreApples() throws {
        let key = P256.Signing.PrivateKey()
        let body = key.pemRepresentation.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined(separator: "\n")
        let bare = try APNsProviderToken(key: body, keyId: "ABC123DEFG", teamId: "DEF123GHIJ")
        #expect(try Self.open(bare.token(), with: key.publicKey).verified)
        #expect(throws: APNsCredentialError.badKey) {
            try APNsProviderToken(key: "not a key", keyId: "ABC123DEFG", teamId: "DEF123GHIJ")
        }
        #expect(throws: APNsCredentialError.badKey) {
            try APNsProviderToken(key: P384.Signing.PrivateKey().pemRepresentation, keyId: "ABC123DEFG", teamId: "DEF123GHIJ")
        }
        for bad in ["ABC123DEF", "ABC123DEFGH", "ABC123DEF-", "ABC123DEF\"", ""] {
            #expect(throws: APNsCredentialError.badKeyId) {
                try APNsProviderToken(key: key.pemRepresentation, keyId: bad, teamId: "DEF123GHIJ")
            }
            #expect(throws: APNsCredentialError.badTeamId) {
                try APNsProviderToken(key: key.pemRepresentation, keyId: "ABC123DEFG", teamId: bad)
            }
        }
    }

    @Test func base64URLRoundTripsAndRefusesTheOtherAlphabet() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 251) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("+/8") == nil && Base64URL.decode("-_8=") == nil)
    }
}

/// Credential files are read only when their owner alone can read them, and errors name
/// the file, never what it holds.
struct SecretFileTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func onlyAFileItsOwnerAloneReadsIsRead() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let secret = "-----BEGIN PRIVATE KEY-----\nSECRETSECRET\n"
        let file = dir.appendingPathComponent("AuthKey.p8")
        try Data(secret.utf8).write(to: file)
        for mode in [0o600, 0o400] {
            chmod(file.path, mode_t(mode))
            #expect(try SecretFile.read(file.path) == Array(secret.utf8))
        }
        for mode in [0o644, 0o640, 0o604, 0o660, 0o606] {
            chmod(file.path, mode_t(mode))
            let error = #expect(throws: SecretFileError.self) { try SecretFile.read(file.path) }
            #expect(error?.description.contains("chmod 600") == true)
            #expect(error?.description.contains(file.path) == true)
            #expect(error?.description.contains("SECRET") == false)
        }
        chmod(file.path, 0o600)
        let link = dir.appendingPathComponent("link.p8")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: file)
        #expect(throws: SecretFileError.self) { try SecretFile.read(link.path) }
        chmod(dir.path, 0o700)
        #expect(throws: SecretFileError.self) { try SecretFile.read(dir.path) }
        #expect(throws: SecretFileError.self) { try SecretFile.read(dir.appendingPathComponent("missing").path) }
        let big = dir.appendingPathComponent("big.p8")
        try Data(repeating: 65, count: SecretFile.maximumBytes + 1).write(to: big)
        chmod(big.path, 0o600)
        #expect(throws: SecretFileError.self) { try SecretFile.read(big.path) }
        // A FIFO is refused at once, not waited on.
        let fifo = dir.appendingPathComponent("fifo.p8")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        #expect(throws: SecretFileError.self) { try SecretFile.read(fifo.path) }
        // Another user's file, however private: only as root can the test give one away.
        if geteuid() == 0 {
            chown(file.path, 65534, 65534)
            let error = #expect(throws: SecretFileError.self) { try SecretFile.read(file.path) }
            #expect(error?.description.contains("another user") == true)
            #expect(try SecretFile.read(file.path, ownerOnly: false) == Array(secret.utf8))
        }
    }
}
