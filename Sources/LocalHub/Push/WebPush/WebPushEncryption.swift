import Crypto
import Foundation
import NotificationHubs

/// Message encryption for Web Push (RFC 8291) in the `aes128gcm` content coding (RFC 8188),
/// as every browser's push service expects it: an ephemeral P-256 key agreed with the
/// subscription's `p256dh` key, mixed with its `auth` secret into a content-encryption key
/// and nonce, and the plaintext sealed with AES-128-GCM in a single record.
///
/// The body is the RFC 8188 header followed by the one record:
///
///     salt (16) ‖ rs = 4096 (uint32, big-endian) ‖ idlen = 65 ‖ sender public key (65)
///     ‖ AES-GCM(plaintext ‖ 0x02) ‖ tag (16)
///
/// The `0x02` is the delimiter of the last (here the only) record; no further padding is
/// added. The whole body is at most 4096 bytes, what every push service must accept
/// (RFC 8030 §7.2), so the plaintext is at most `maximumPlaintext` (3993) bytes.
public enum WebPushEncryption {
    /// The record size written in the header.
    public static let recordSize = 4096
    /// Salt, record size, key id length and the sender's public key.
    public static let headerSize = 16 + 4 + 1 + 65
    /// The AES-GCM tag at the end of the record.
    public static let tagSize = 16
    /// The longest plaintext: a body of 4096 bytes less the header, the tag and the
    /// delimiter (RFC 8291 §4).
    public static let maximumPlaintext = recordSize - headerSize - tagSize - 1

    /// Encrypts `plaintext` for the subscription whose keys are `p256dh` (base64url of the
    /// uncompressed P-256 point, 65 bytes) and `auth` (base64url, 16 bytes). `senderKey` and
    /// `salt` are fresh and random unless given, which only tests with known vectors should
    /// do: a key and salt used twice make the same content key twice.
    public static func encrypt(
        _ plaintext: [UInt8], p256dh: String, auth: String, senderKey: P256.KeyAgreement.PrivateKey? = nil,
        salt: [UInt8]? = nil
    ) throws(WebPushEncryptionError) -> [UInt8] {
        guard let receiverBytes = WebPushSubscription.publicKey(p256dh),
            let receiver = try? P256.KeyAgreement.PublicKey(x963Representation: receiverBytes)
        else { throw .badP256dh }
        guard let secret = WebPushSubscription.authSecret(auth) else { throw .badAuth }
        let salt = salt ?? (0..<16).map { _ in UInt8.random(in: .min ... .max) }
        guard salt.count == 16 else { throw .badSalt }
        guard plaintext.count <= maximumPlaintext else { throw .tooLarge(plaintext.count) }
        let sender = senderKey ?? P256.KeyAgreement.PrivateKey()
        let senderBytes = [UInt8](sender.publicKey.x963Representation)

        let (key, nonce) = try contentKey(
            sender: sender, receiver: receiver, receiverBytes: receiverBytes, senderBytes: senderBytes, auth: secret,
            salt: salt)
        let sealed: AES.GCM.SealedBox
        do {
            sealed = try AES.GCM.seal(plaintext + [0x02], using: key, nonce: nonce)
        } catch {
            // Not reached with a 16-byte key and a 12-byte nonce.
            throw .badP256dh
        }

        var body: [UInt8] = []
        body.reserveCapacity(headerSize + plaintext.count + 1 + tagSize)
        body += salt
        body += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: recordSize >> $0) }
        body.append(UInt8(senderBytes.count))
        body += senderBytes
        body += sealed.ciphertext
        body += sealed.tag
        return body
    }

    /// The content-encryption key and nonce (RFC 8291 §3.3–3.4, RFC 8188 §2.2–2.3).
    private static func contentKey(
        sender: P256.KeyAgreement.PrivateKey, receiver: P256.KeyAgreement.PublicKey, receiverBytes: [UInt8],
        senderBytes: [UInt8], auth: [UInt8], salt: [UInt8]
    ) throws(WebPushEncryptionError) -> (SymmetricKey, AES.GCM.Nonce) {
        let shared: SharedSecret
        do { shared = try sender.sharedSecretFromKeyAgreement(with: receiver) } catch { throw .badP256dh }
        // IKM = HKDF(salt: auth, ikm: ECDH secret, info: "WebPush: info" 0x00 ‖ ua key ‖ as key).
        let keyInfo = Array("WebPush: info".utf8) + [0x00] + receiverBytes + senderBytes
        let ikm = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: auth, sharedInfo: keyInfo, outputByteCount: 32)
        // CEK and NONCE = HKDF(salt, IKM, "Content-Encoding: aes128gcm|nonce" 0x00).
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Array("Content-Encoding: aes128gcm".utf8) + [0x00],
            outputByteCount: 16)
        let nonceKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Array("Content-Encoding: nonce".utf8) + [0x00], outputByteCount: 12)
        // The record's sequence number, 0 for the only record, XORed in changes nothing.
        let nonceBytes = nonceKey.withUnsafeBytes { Array($0) }
        do { return (key, try AES.GCM.Nonce(data: nonceBytes)) } catch { throw .badP256dh }
    }
}
