import Foundation

/// A small XML element tree: enough for Atom entries and feeds, `NotificationOutcome`,
/// `NotificationDetails` and error bodies. Names are kept without their namespace prefix.
public struct XMLNode: Sendable, Hashable {
    /// Local name (prefix removed).
    public var name: String
    public var attributes: [String: String]
    public var children: [XMLNode]
    /// Character data directly inside this element, CDATA included, entities decoded.
    public var text: String

    public init(name: String, attributes: [String: String] = [:], children: [XMLNode] = [], text: String = "") {
        self.name = name
        self.attributes = attributes
        self.children = children
        self.text = text
    }

    /// The first child with this local name (case-insensitive).
    public func child(_ name: String) -> XMLNode? {
        let lower = name.lowercased()
        return children.first { $0.name.lowercased() == lower }
    }

    /// The first descendant, depth first, with this local name (case-insensitive).
    public func descendant(_ name: String) -> XMLNode? {
        let lower = name.lowercased()
        for child in children {
            if child.name.lowercased() == lower { return child }
            if let found = child.descendant(name) { return found }
        }
        return nil
    }

    /// Every child with this local name.
    public func children(_ name: String) -> [XMLNode] {
        let lower = name.lowercased()
        return children.filter { $0.name.lowercased() == lower }
    }

    /// Whether the element carries `i:nil="true"`.
    public var isNil: Bool {
        attributes.contains { key, value in (key == "nil" || key.hasSuffix(":nil")) && value == "true" }
    }
}

/// Why an XML text could not be read.
public struct XMLParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public let offset: Int
    public let reason: String
    public var description: String { "invalid XML at byte \(offset + 1): \(reason)" }
}

extension XMLNode {
    /// Parses a document and returns its root element. Declarations, comments and
    /// processing instructions are skipped; DTDs are refused.
    public init(parsing text: String) throws(XMLParseError) {
        var parser = XMLReader(bytes: Array(text.utf8))
        self = try parser.parseDocument()
    }

    /// Escapes text for element content or a double-quoted attribute (`& < > "`). Characters
    /// XML cannot hold at all (C0 controls but tab and line breaks, U+FFFE, U+FFFF) become
    /// U+FFFD: stored text never has them, but error details quote what a client sent.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.unicodeScalars.append(holdable(scalar))
            }
        }
        return out
    }

    /// Wraps text in CDATA, splitting any `]]>` it contains; what XML cannot hold becomes
    /// U+FFFD, as in `escape`.
    public static func cdata(_ text: String) -> String {
        var clean = text
        if StoredText.forbidden(in: text, body: true) != nil {
            clean = String(String.UnicodeScalarView(text.unicodeScalars.map(holdable)))
        }
        return "<![CDATA[" + clean.replacingAll("]]>", with: "]]]]><![CDATA[>") + "]]>"
    }

    /// `scalar`, or U+FFFD where XML cannot hold it: the rule stored bodies follow.
    static func holdable(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        StoredText.isAllowed(scalar, body: true) ? scalar : "\u{FFFD}"
    }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty, contains(target) else { return self }
        var result = ""
        var rest = Substring(self)
        while let range = rest.range(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        result += rest
        return result
    }
}

private struct XMLReader {
    let bytes: [UInt8]
    var i = 0
    static let maximumDepth = 64

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    func error(_ reason: String) -> XMLParseError { XMLParseError(offset: i, reason: reason) }

    func starts(with literal: String) -> Bool {
        let utf8 = Array(literal.utf8)
        guard i + utf8.count <= bytes.count else { return false }
        return Array(bytes[i..<(i + utf8.count)]) == utf8
    }

    mutating func skip(past literal: String) throws(XMLParseError) {
        let utf8 = Array(literal.utf8)
        while i + utf8.count <= bytes.count {
            if bytes[i] == utf8[0], Array(bytes[i..<(i + utf8.count)]) == utf8 {
                i += utf8.count
                return
            }
            i += 1
        }
        throw error("'\(literal)' is missing")
    }

    mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
    }

    mutating func skipMisc() throws(XMLParseError) {
        while true {
            skipSpace()
            if starts(with: "\u{FEFF}") {
                i += 3
                continue
            }
            if starts(with: "<?") {
                try skip(past: "?>")
                continue
            }
            if starts(with: "<!--") {
                try skip(past: "-->")
                continue
            }
            if starts(with: "<!DOCTYPE") || starts(with: "<!doctype") {
                throw error("document type declarations are not accepted")
            }
            return
        }
    }

    mutating func parseDocument() throws(XMLParseError) -> XMLNode {
        try skipMisc()
        guard i < bytes.count, bytes[i] == UInt8(ascii: "<") else { throw error("expected the root element") }
        let root = try parseElement(depth: 0)
        try skipMisc()
        guard i == bytes.count else { throw error("unexpected content after the root element") }
        return root
    }

    mutating func parseName() throws(XMLParseError) -> String {
        let start = i
        while i < bytes.count {
            let c = bytes[i]
            if c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D || c == UInt8(ascii: ">") || c == UInt8(ascii: "/")
                || c == UInt8(ascii: "=")
            {
                break
            }
            i += 1
        }
        guard i > start else { throw error("a name is missing") }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    static func localName(_ name: String) -> String {
        if let colon = name.lastIndex(of: ":") { return String(name[name.index(after: colon)...]) }
        return name
    }

    mutating func parseElement(depth: Int) throws(XMLParseError) -> XMLNode {
        guard depth < Self.maximumDepth else { throw error("elements are nested too deeply") }
        i += 1  // <
        let qualified = try parseName()
        var node = XMLNode(name: Self.localName(qualified))
        while true {
            skipSpace()
            guard i < bytes.count else { throw error("the tag <\(qualified)> is not closed") }
            if bytes[i] == UInt8(ascii: "/") {
                guard i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: ">") else { throw error("expected '/>'") }
                i += 2
                return node
            }
            if bytes[i] == UInt8(ascii: ">") {
                i += 1
                break
            }
            let attributeName = try parseName()
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "=") else { throw error("attribute \(attributeName) has no value") }
            i += 1
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") || bytes[i] == UInt8(ascii: "'") else {
                throw error("attribute values must be quoted")
            }
            let quote = bytes[i]
            i += 1
            let start = i
            while i < bytes.count, bytes[i] != quote { i += 1 }
            guard i < bytes.count else { throw error("an attribute value is not closed") }
            try checkCharacters(start..<i, in: "the attribute \(attributeName)")
            let raw = String(decoding: bytes[start..<i], as: UTF8.self)
            i += 1
            let key = attributeName.hasPrefix("xmlns") ? attributeName : Self.localName(attributeName)
            node.attributes[key] = try decodeEntities(raw, in: "the attribute \(attributeName)")
        }
        var text = ""
        while true {
            guard i < bytes.count else { throw error("<\(qualified)> is not closed") }
            if bytes[i] == UInt8(ascii: "<") {
                if starts(with: "</") {
                    i += 2
                    let closing = try parseName()
                    skipSpace()
                    guard closing == qualified, i < bytes.count, bytes[i] == UInt8(ascii: ">") else {
                        throw error("</\(closing)> does not close <\(qualified)>")
                    }
                    i += 1
                    node.text = text
                    return node
                } else if starts(with: "<![CDATA[") {
                    i += 9
                    let start = i
                    try skip(past: "]]>")
                    try checkCharacters(start..<(i - 3), in: "<\(qualified)>")
                    text += String(decoding: bytes[start..<(i - 3)], as: UTF8.self)
                } else if starts(with: "<!--") {
                    try skip(past: "-->")
                } else if starts(with: "<?") {
                    try skip(past: "?>")
                } else {
                    node.children.append(try parseElement(depth: depth + 1))
                }
            } else {
                let start = i
                while i < bytes.count, bytes[i] != UInt8(ascii: "<") { i += 1 }
                try checkCharacters(start..<i, in: "<\(qualified)>")
                text += try decodeEntities(String(decoding: bytes[start..<i], as: UTF8.self), in: "<\(qualified)>")
            }
        }
    }

    /// Refuses bytes that XML 1.0 does not allow in a document: the C0 controls other than
    /// tab, line feed and carriage return, and the noncharacters U+FFFE and U+FFFF. None of
    /// them could be written back out as XML.
    func checkCharacters(_ range: Range<Int>, in place: String) throws(XMLParseError) {
        var k = range.lowerBound
        while k < range.upperBound {
            let c = bytes[k]
            if c < 0x20, c != 0x09, c != 0x0A, c != 0x0D {
                throw XMLParseError(offset: k, reason: "\(place) holds the control character U+\(Hex.padded(c, width: 4))")
            }
            if c == 0xEF, k + 2 < range.upperBound, bytes[k + 1] == 0xBF, bytes[k + 2] == 0xBE || bytes[k + 2] == 0xBF {
                throw XMLParseError(offset: k, reason: "\(place) holds the noncharacter U+FFF\(bytes[k + 2] == 0xBE ? "E" : "F")")
            }
            k += 1
        }
    }

    /// Whether a character reference may stand in a document (XML 1.0 `Char`).
    static func isCharacter(_ value: UInt32) -> Bool {
        switch value {
        case 0x09, 0x0A, 0x0D, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: return true
        default: return false
        }
    }

    /// Decodes the five named entities and character references. Works on the UTF-8 bytes:
    /// as Characters, `;` followed by a combining mark is one grapheme, not a `;`.
    func decodeEntities(_ raw: String, in place: String) throws(XMLParseError) -> String {
        let bytes = Array(raw.utf8)
        guard bytes.contains(UInt8(ascii: "&")) else { return raw }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var k = 0
        while k < bytes.count {
            guard bytes[k] == UInt8(ascii: "&") else {
                out.append(bytes[k])
                k += 1
                continue
            }
            guard let semi = bytes[k...].firstIndex(of: UInt8(ascii: ";")) else {
                throw error("an entity is not closed with ';'")
            }
            let entity = String(decoding: bytes[(k + 1)..<semi], as: UTF8.self)
            switch entity {
            case "amp": out.append(UInt8(ascii: "&"))
            case "lt": out.append(UInt8(ascii: "<"))
            case "gt": out.append(UInt8(ascii: ">"))
            case "quot": out.append(UInt8(ascii: "\""))
            case "apos": out.append(UInt8(ascii: "'"))
            default:
                var value: UInt32?
                let digits = entity.utf8.dropFirst(entity.hasPrefix("#x") || entity.hasPrefix("#X") ? 2 : 1)
                if entity.hasPrefix("#"), !digits.isEmpty, digits.count <= 8 {
                    let hex = entity.hasPrefix("#x") || entity.hasPrefix("#X")
                    value = digits.reduce(UInt32?(0)) { partial, byte in
                        guard let partial, let digit = hex ? PercentEncoding.hexValue(byte) : Self.decimal(byte) else {
                            return nil
                        }
                        return partial &* (hex ? 16 : 10) &+ UInt32(digit)
                    }
                }
                guard let value, let scalar = Unicode.Scalar(value) else { throw error("unknown entity &\(entity.prefix(20));") }
                guard Self.isCharacter(value) else {
                    throw error("\(place) holds &\(entity);, a character XML does not allow (U+\(Hex.padded(value, width: 4)))")
                }
                out.append(contentsOf: String(Character(scalar)).utf8)
            }
            k = semi + 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decimal(_ byte: UInt8) -> UInt8? {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? byte - UInt8(ascii: "0") : nil
    }
}
