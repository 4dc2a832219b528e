import Crypto
import Foundation
import LocalHub
import NotificationHubs

/// What the peer does as a push service checking the sender (RFC 8292) and as the browser
/// reading the message (RFC 8291), each step written out from the RFCs on its own, not
/// through the client's code.
extension WebPushPeer {
    /// Nil when `authorization` is a VAPID header (`vapid t=<JWT>, k=<key>`) whose key is
    /// `key` (uncompressed P-256 point) and whose ES256 token verifies with the key it names,
    /// is for `origin`, expires after `now` and within 24 hours, and names a subject;
    /// otherwise the status and reason a push service would answer (403 for a key that is not
    /// the subscription's, 401 for the rest).
    public static func checkVAPID(_ authorization: String?, key: [UInt8], origin: String, now: Date) -> (Int, String)? {
        guard let authorization, authorization.lowercased().hasPrefix("vapid ") else { return (401, "MissingVAPID") }
        var parameters: [String: String] = [:]
        for part in authorization.dropFirst(6).split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { return (401, "BadVAPIDHeader") }
            parameters[pair[0].lowercased()] = pair[1]
        }
        guard let token = parameters["t"], let named = parameters["k"].flatMap(Base64URL.decode),
            let signer = try? P256.Signing.PublicKey(x963Representation: named)
        else { return (401, "BadVAPIDHeader") }
        guard named == key else { return (403, "VAPIDKeyMismatch") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
            let signatureBytes = Base64URL.decode(parts[2]), signatureBytes.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            signer.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8))
        else { return (401, "BadSignature") }
        guard let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
            header["alg"] as? String == "ES256", header["typ"] == nil || header["typ"] as? String == "JWT",
            let claims = try? JSONSerialization.jsonObject(with: Data(claimBytes)) as? [String: Any]
        else { return (401, "BadToken") }
        guard claims["aud"] as? String == origin else { return (401, "BadAudience") }
        guard let exp = (claims["exp"] as? NSNumber)?.doubleValue, exp > now.timeIntervalSince1970,
            exp <= now.timeIntervalSince1970 + 24 * 60 * 60
        else { return (401, "BadExpiry") }
        guard let subject = claims["sub"] as? String, subject.hasPrefix("mailto:") || subject.hasPrefix("https:") else {
            return (401, "BadSubject")
        }
        return nil
    }

    /// The plaintext of an `aes128gcm` Web Push body (RFC 8188 header, one record) for the
    /// browser holding `key` and `auth`; nil when it does not decrypt.
    public static func decrypt(_ body: [UInt8], key: P256.KeyAgreement.PrivateKey, auth: [UInt8]) -> [UInt8]? {
        // The header: salt (16), record size (4, big-endian), key id length (1), key id.
        guard body.count >= 21 else { return nil }
        let salt = Array(body[0..<16])
        let recordSize = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let idLength = Int(body[20])
        guard idLength == 65, body.count >= 21 + idLength else { return nil }
        let senderBytes = Array(body[21..<(21 + idLength)])
        let record = Array(body[(21 + idLength)...])
        // One record, holding at least its tag and its delimiter, and no more than rs.
        guard recordSize >= 18, record.count >= 17, record.count <= recordSize,
            let sender = try? P256.KeyAgreement.PublicKey(x963Representation: senderBytes),
            let shared = try? key.sharedSecretFromKeyAgreement(with: sender)
        else { return nil }
        let ecdh = shared.withUnsafeBytes { Array($0) }
        let receiverBytes = Array(key.publicKey.x963Representation)

        // RFC 8291 §3.3: PRK_key = HMAC(auth, ecdh); IKM = HMAC(PRK_key, key_info ‖ 0x01).
        let authKey = mac(key: auth, ecdh)
        let ikm = mac(key: authKey, Array("WebPush: info".utf8) + [0] + receiverBytes + senderBytes + [1])
        // RFC 8188 §2.2–2.3: PRK = HMAC(salt, IKM); CEK and NONCE its first expansions.
        let prk = mac(key: salt, ikm)
        let cek = Array(mac(key: prk, Array("Content-Encoding: aes128gcm".utf8) + [0, 1]).prefix(16))
        let nonce = Array(mac(key: prk, Array("Content-Encoding: nonce".utf8) + [0, 1]).prefix(12))

        guard
            let box = try? AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: nonce), ciphertext: record.dropLast(16), tag: record.suffix(16)),
            let padded = try? AES.GCM.open(box, using: SymmetricKey(data: cek))
        else { return nil }
        // The last record ends in 0x02, then any zeros of padding.
        var plaintext = Array(padded)
        while plaintext.last == 0 { plaintext.removeLast() }
        guard plaintext.last == 2 else { return nil }
        plaintext.removeLast()
        return plaintext
    }

    private static func mac(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
    }
}
