import Foundation
import NotificationHubs

/// How a local hub proves it is the one that wrote `hub.json`: a client sends a fresh random
/// challenge to `/healthz`, the hub answers with a signature of it keyed by the secret of its
/// state file (which only the owner can read). Whatever squats the port after the hub died
/// cannot answer, so it never sees a token.
public enum LocalHubProof {
    /// The query parameter of `/healthz` that carries the challenge.
    public static let challengeParameter = "challenge"
    /// The response header that carries the answer.
    public static let header = "X-Local-Hub-Proof"
    /// The longest challenge a hub answers.
    public static let maximumChallengeLength = 128

    /// A new secret: 32 random bytes, base64.
    public static func makeSecret() -> String {
        Data(Hex.randomBytes(32)).base64EncodedString()
    }

    /// A new challenge: 16 random bytes as hex.
    public static func makeChallenge() -> String {
        Hex.random(bytes: 16, uppercase: false)
    }

    /// The answer to `challenge`: the SAS signature primitive (HMAC-SHA256, base64) over a
    /// fixed label and the challenge, keyed by the secret.
    public static func answer(challenge: String, secret: String) -> String {
        SharedAccessSignature.sign(encodedResource: "breaking-news-local-hub", expiry: challenge, key: secret)
    }

    /// Whether a challenge is one a hub should answer: short, and hex or base64 characters.
    public static func isValidChallenge(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maximumChallengeLength
            && text.utf8.allSatisfy { PercentEncoding.isUnreserved($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") }
    }
}
