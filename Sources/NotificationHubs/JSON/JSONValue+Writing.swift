extension JSONValue {
    /// The compact JSON text of this value.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The compact JSON text of this value, as UTF-8 bytes.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(to: &out)
        return out
    }

    /// Appends the compact JSON text of this value to `out`.
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): out.append(contentsOf: n.utf8)
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                element.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `s` as a quoted JSON string, escaping quotes, backslashes and control characters.
    public static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        writeEscaped(s, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// Appends the escaped content of a JSON string, without the quotes. Besides what JSON
    /// requires, DEL and the C1 controls (U+0080–U+009F) are written as `\u` escapes too, so
    /// JSON text printed to a terminal carries no control character.
    public static func writeEscaped(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { utf8 in
            var runStart = 0
            var i = 0
            while i < utf8.count {
                let c = utf8[i]
                i += 1
                guard c < 0x20 || c == 0x22 || c == 0x5C || c == 0x7F || c == 0xC2 else { continue }
                var escaped = c
                if c == 0xC2 {
                    // U+0080–U+009F are C2 80 to C2 9F in UTF-8.
                    guard i < utf8.count, utf8[i] <= 0x9F else { continue }
                    escaped = utf8[i]
                }
                if runStart < i - 1 { out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<(i - 1)])) }
                if c == 0xC2 { i += 1 }
                runStart = i
                switch escaped {
                case 0x22: out.append(contentsOf: [0x5C, 0x22])
                case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                case 0x08: out.append(contentsOf: [0x5C, UInt8(ascii: "b")])
                case 0x0C: out.append(contentsOf: [0x5C, UInt8(ascii: "f")])
                default:
                    out.append(contentsOf: [
                        0x5C, UInt8(ascii: "u"), 0x30, 0x30, hexDigits[Int(escaped >> 4)], hexDigits[Int(escaped & 0xF)],
                    ])
                }
            }
            if runStart < utf8.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// `s` as a quoted JSON string.
    public static func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        writeString(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

extension JSONValue {
    /// The JSON text indented by two spaces per level, for people.
    public var prettyText: String {
        var out = ""
        writePretty(to: &out, level: 0)
        return out
    }

    private func writePretty(to out: inout String, level: Int) {
        let pad = String(repeating: "  ", count: level + 1)
        let closing = String(repeating: "  ", count: level)
        switch self {
        case .array(let elements) where !elements.isEmpty:
            out += "[\n"
            for (i, element) in elements.enumerated() {
                out += pad
                element.writePretty(to: &out, level: level + 1)
                out += i < elements.count - 1 ? ",\n" : "\n"
            }
            out += closing + "]"
        case .object(let members) where !members.isEmpty:
            out += "{\n"
            for (i, (key, value)) in members.enumerated() {
                out += pad + JSONValue.quoted(key) + ": "
                value.writePretty(to: &out, level: level + 1)
                out += i < members.count - 1 ? ",\n" : "\n"
            }
            out += closing + "}"
        default:
            out += text
        }
    }
}
