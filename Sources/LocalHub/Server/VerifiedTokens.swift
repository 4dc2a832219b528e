import Foundation
import NotificationHubs
import Synchronization

/// Verifies tokens, remembering the headers whose signature checked out: clients reuse
/// one token for many requests (every SDK caches its token), so the HMAC and the URL work
/// are paid once per token. Expiry and audience are still checked on every request.
final class VerifiedTokens: Sendable {
    let verifier: SASVerifier
    private let remembered = Mutex<[String: SASVerifier.SignedToken]>([:])
    /// Distinct tokens kept at most; past that the memory starts afresh.
    static let capacity = 4096

    init(verifier: SASVerifier) {
        self.verifier = verifier
    }

    func verify(header: String?, host: String, path: String, now: Date = Date()) throws(SASVerificationError)
        -> SASVerifier.SignedToken
    {
        let token: SASVerifier.SignedToken
        if let header, let known = remembered.withLock({ $0[header] }) {
            token = known
        } else {
            token = try verifier.verifySignature(header: header)
            if let header {
                remembered.withLock { remembered in
                    if remembered.count >= Self.capacity { remembered.removeAll(keepingCapacity: true) }
                    remembered[header] = token
                }
            }
        }
        try verifier.check(token, host: host, path: path, now: now)
        return token
    }
}
