import Crypto

/// Hexadecimal text, written one way everywhere: device tokens, random ids, challenges and
/// the `U+001B` an error names a character by.
public enum Hex {
    /// The SHA-256 digest of `text`'s UTF-8 bytes, upper-case hex.
    public static func sha256(_ text: String) -> String { encode(SHA256.hash(data: Array(text.utf8))) }

    /// Two digits per byte.
    public static func encode(_ bytes: some Sequence<UInt8>, uppercase: Bool = true) -> String {
        let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `value` in at least `width` digits, zero-padded.
    public static func padded(_ value: some BinaryInteger, width: Int, uppercase: Bool = true) -> String {
        let text = String(value, radix: 16, uppercase: uppercase)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    /// `count` bytes from the system's secure random source, as hex.
    public static func random(bytes count: Int, uppercase: Bool = true) -> String {
        encode(randomBytes(count), uppercase: uppercase)
    }

    /// `count` bytes from the system's secure random source.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
