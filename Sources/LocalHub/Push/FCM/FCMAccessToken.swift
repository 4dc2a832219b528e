import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NotificationHubs
import Synchronization
import _CryptoExtras

/// The OAuth 2.0 access token FCM v1 wants on every request, from Google's token endpoint by
/// the service-account flow (RFC 7523): an RS256 JWT assertion signed with the service
/// account's key, `{"alg":"RS256","typ":"JWT"}.{"iss","scope","aud","iat","exp"}`, traded for
/// `{"access_token","expires_in","token_type"}`. The token is kept until 5 minutes before it
/// expires (half its life when that is shorter); callers asking while it is being fetched
/// share the one request. After FCM refused the token in use (401), `expired` lets the next
/// caller fetch a new one at once, but only once for a token fetched that way.
public final class FCMAccessToken: Sendable {
    /// The one scope FCM v1 needs.
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// How long an assertion is valid; Google takes at most an hour.
    static let assertionLifetime: Int64 = 3600
    /// An access token is renewed this long before it expires, at most.
    static let longestMargin: TimeInterval = 5 * 60
    /// Taken when the token endpoint does not say how long its token lasts.
    static let assumedLifetime: TimeInterval = 3600

    public let clientEmail: String
    public let tokenURI: String
    private let key: _RSA.Signing.PrivateKey

    /// An access token, and when to fetch the next.
    struct Issued: Sendable {
        let token: String
        let renewAt: Date
        /// Fetched because FCM refused the one before: a 401 to it waits for the regular
        /// renewal, so that a service that refuses every token is not asked for one per send.
        let early: Bool
    }
    private struct State {
        var current: Issued?
        var fetching: Task<Issued, any Error>?
        /// The next fetch replaces a token FCM refused.
        var early = false
    }
    private let state = Mutex(State())
    private enum Step {
        case kept(String)
        case wait(Task<Issued, any Error>)
    }

    /// Why no access token could be had.
    public enum Failure: Error, Sendable, Equatable {
        /// The token endpoint could not be reached, or the connection broke.
        case unreachable(String)
        /// It answered `status` with OAuth's `error` (`invalid_grant`…), or `HTTP n`.
        case refused(status: Int, error: String, retryAfter: Duration?)
        /// It answered 200 without a usable `access_token`.
        case unreadable(String)
    }

    /// Reads the service account's key once: PEM PKCS #8 (`-----BEGIN PRIVATE KEY-----`,
    /// as Google's key files hold it), RSA of 2048 bits or more.
    public init(_ credentials: PushCredentials.FCMv1) throws(FCMCredentialError) {
        key = try Self.key(credentials.privateKeyPEM)
        clientEmail = credentials.clientEmail
        tokenURI = credentials.tokenURI
    }

    /// The public half, for whoever checks the assertions (the token endpoint; the tests' peer).
    public var publicKey: _RSA.Signing.PublicKey { key.publicKey }

    /// The access token to send at `now`: the one kept, or a new one from the token endpoint
    /// (through `http`) when it is due for renewal.
    public func token(using http: HTTPClient, now: Date = Date()) async throws(Failure) -> String {
        let step = state.withLock { state -> Step in
            if let current = state.current, now < current.renewAt { return .kept(current.token) }
            if let fetching = state.fetching { return .wait(fetching) }
            let early = state.early
            state.early = false
            // Not the caller's child: one caller giving up does not cancel the others' fetch.
            let fetching = Task { try await self.fetch(using: http, at: now, early: early) }
            state.fetching = fetching
            return .wait(fetching)
        }
        let task: Task<Issued, any Error>
        switch step {
        case .kept(let token): return token
        case .wait(let fetching): task = fetching
        }
        do {
            return try await task.value.token
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .unreachable(String(describing: error).prefix(200).description)
        }
    }

    /// FCM answered 401 to `token`: true when the request is worth one more try with
    /// `token(using:)`. Drops `token` when it is the one kept and was not itself fetched
    /// after a 401; when another request already replaced it, the current one is tried.
    @discardableResult
    public func expired(_ token: String) -> Bool {
        state.withLock { state in
            guard let current = state.current else { return true }
            if current.token != token { return true }
            guard !current.early else { return false }
            state.current = nil
            state.early = true
            return true
        }
    }

    /// The signed assertion for `date`, as sent to the token endpoint.
    public func assertion(at date: Date) -> String {
        let iat = Int64(date.timeIntervalSince1970.rounded(.down))
        let header = #"{"alg":"RS256","typ":"JWT"}"#
        let claims = JSONValue.object([
            ("iss", .string(clientEmail)), ("scope", .string(Self.scope)), ("aud", .string(tokenURI)),
            ("iat", .number(String(iat))), ("exp", .number(String(iat + Self.assertionLifetime))),
        ])
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(claims.bytes)
        // RS256 is RSASSA-PKCS1-v1_5 over SHA-256 (RFC 7518 §3.3): the padding swift-crypto
        // calls insecure is the one the JWT algorithm names.
        let signature = try? key.signature(for: Array(signingInput.utf8), padding: .insecurePKCS1v1_5)
        return signingInput + "." + Base64URL.encode(Array(signature?.rawRepresentation ?? Data()))
    }

    /// How long after it was issued a token of `lifetime` seconds is renewed: 5 minutes
    /// before it expires, or halfway when it lasts less than 10 minutes.
    static func renewal(after lifetime: TimeInterval) -> TimeInterval {
        let life = max(0, lifetime)
        return life - min(longestMargin, life / 2)
    }

    private func fetch(using http: HTTPClient, at now: Date, early: Bool) async throws -> Issued {
        do {
            let issued = try await request(using: http, at: now, early: early)
            state.withLock {
                $0.current = issued
                $0.fetching = nil
            }
            return issued
        } catch {
            state.withLock {
                $0.fetching = nil
                // The next caller still replaces the refused token.
                $0.early = $0.early || early
            }
            throw error
        }
    }

    private func request(using http: HTTPClient, at now: Date, early: Bool) async throws(Failure) -> Issued {
        var request = HTTPClientRequest(url: tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "accept", value: "application/json")
        let form = "grant_type=\(Self.formEncoded(Self.grantType))&assertion=\(Self.formEncoded(assertion(at: now)))"
        request.body = .bytes(ByteBuffer(string: form))
        let status: Int
        let body: [UInt8]
        let retryAfter: Duration?
        do {
            let response = try await http.execute(request, timeout: .seconds(30))
            status = Int(response.status.code)
            retryAfter = PushRetries.retryAfter(response.headers.first(name: "retry-after"))
            body = Array(try await response.body.collect(upTo: 64 << 10).readableBytesView)
        } catch {
            throw .unreachable(String(describing: error).prefix(200).description)
        }
        let answer = try? JSONValue(parsing: body)
        guard status == 200 else {
            let error = answer?["error"]?.stringValue.map(Self.printable).flatMap { $0.isEmpty ? nil : $0 }
            throw .refused(status: status, error: error ?? "HTTP \(status)", retryAfter: retryAfter)
        }
        // It goes into a header: visible ASCII only, and of a sane length.
        guard let token = answer?["access_token"]?.stringValue, !token.isEmpty, token.utf8.count <= 4096,
            token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { throw .unreadable("the token endpoint's answer has no access_token") }
        var lifetime = Self.assumedLifetime
        if case .number(let text)? = answer?["expires_in"], let seconds = Double(text), seconds.isFinite {
            lifetime = seconds
        }
        return Issued(token: token, renewAt: now.addingTimeInterval(Self.renewal(after: lifetime)), early: early)
    }

    /// Reads a PKCS #8 PEM RSA key; the error never quotes the text.
    static func key(_ pem: String) throws(FCMCredentialError) -> _RSA.Signing.PrivateKey {
        let text = pem.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("-----BEGIN RSA PRIVATE KEY-----") { throw .pkcs1Key }
        guard text.hasPrefix("-----BEGIN PRIVATE KEY-----") else { throw .notPEM }
        do {
            return try _RSA.Signing.PrivateKey(pemRepresentation: text)
        } catch {
            throw .notRSAKey
        }
    }

    /// `application/x-www-form-urlencoded`: all but letters, digits and `-._~` percent-encoded.
    static func formEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// Printable ASCII only, at most 64 characters: what a reason may hold.
    static func printable(_ text: String) -> String {
        String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F }.prefix(64).map(Character.init))
    }
}

/// Why FCM v1 credentials were refused; never quotes the key.
public enum FCMCredentialError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A PKCS #1 key (`BEGIN RSA PRIVATE KEY`), not the PKCS #8 one Google gives.
    case pkcs1Key
    /// Not a PEM private key at all.
    case notPEM
    /// PEM PKCS #8, but not an RSA key of 2048 bits or more.
    case notRSAKey

    public var description: String {
        switch self {
        case .pkcs1Key:
            "the FCM service account's private_key is PKCS #1 (BEGIN RSA PRIVATE KEY); use the PKCS #8 key of the "
                + "service account's JSON key file as Google gives it (openssl pkcs8 -topk8 -nocrypt converts one)"
        case .notPEM:
            "the FCM service account's private_key is not a PEM private key (BEGIN PRIVATE KEY), as the service "
                + "account's JSON key file from Google holds it"
        case .notRSAKey:
            "the FCM service account's private_key is not an RSA private key of 2048 bits or more"
        }
    }
}
