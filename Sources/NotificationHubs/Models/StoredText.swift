/// Text a hub keeps must come back out the way it went in: as JSON, as XML (registrations,
/// projections, error bodies) and on a terminal. Control characters cannot: XML 1.0 has no
/// way to write U+0000, a database driver may cut a string at it, and a terminal obeys
/// escape sequences. So every stored string is checked before it is accepted.
public enum StoredText {
    /// The first character of `text` that a stored string may not hold. A field (a name, a
    /// header, an expiry, a handle) takes no control character at all: C0, DEL and C1, nor
    /// the noncharacters U+FFFE and U+FFFF. A `body` (a template or a notification) takes
    /// what XML 1.0 can hold: tab and line breaks, DEL and C1 too, since a JSON writer such
    /// as `JSON.stringify` leaves those unescaped; terminals are kept safe where text is
    /// shown, not by refusing news that carries them.
    public static func forbidden(in text: String, body: Bool = false) -> Unicode.Scalar? {
        // Fast path: bytes below 0x7F other than controls are always fine.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return nil }
        return text.unicodeScalars.first { !isAllowed($0, body: body) }
    }

    static func isAllowed(_ scalar: Unicode.Scalar, body: Bool) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0D, 0x7F...0x9F: return body
        case 0x00...0x1F, 0xFFFE, 0xFFFF: return false
        default: return true
        }
    }

    /// Refuses `text` when it holds a character `forbidden(in:)` finds, naming `field`.
    public static func check(_ text: String, field: String, body: Bool = false) throws(InstallationError) {
        guard let bad = forbidden(in: text, body: body) else { return }
        throw InstallationError("\(field) holds \(describe(bad)), which cannot be stored")
    }

    /// `the control character U+001B`, the way errors name a character.
    public static func describe(_ scalar: Unicode.Scalar) -> String {
        let kind = scalar.value >= 0xFFFE ? "noncharacter" : "control character"
        return "the \(kind) U+" + Hex.padded(scalar.value, width: 4)
    }
}

/// Ids of installations and registrations (wire spec §4.2): what `$InstallationId:{…}`
/// accepts, letters, digits and `- _ @ # . : =`, 1 to 200 of them. No space, no control
/// character, nothing a path, a log line or an XML document would have to escape.
public enum HubId {
    /// Longest id.
    public static let maximumLength = 200

    public static func isValid(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maximumLength
            && text.utf8.allSatisfy { Tag.isTagByte($0) || $0 == UInt8(ascii: "=") }
    }

    /// Refuses an invalid id, naming what it is (`the installationId`, `the registration id`).
    public static func check(_ text: String, what: String) throws(InstallationError) {
        guard !isValid(text) else { return }
        let shown = String(
            text.unicodeScalars.prefix(60).map { StoredText.isAllowed($0, body: false) ? Character($0) : "?" })
        throw InstallationError(
            "\(what) '\(shown)' is invalid: use 1 to \(maximumLength) letters, digits and - _ @ # . : =")
    }
}
