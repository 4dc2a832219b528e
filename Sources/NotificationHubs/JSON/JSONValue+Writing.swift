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

    /// Appends the escaped content of a JSON string, without the quotes.
    public static func writeEscaped(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { utf8 in
            var runStart = 0
            for i in 0..<utf8.count {
                let c = utf8[i]
                guard c < 0x20 || c == 0x22 || c == 0x5C else { continue }
                if runStart < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i])) }
                runStart = i + 1
                switch c {
                case 0x22: out.append(contentsOf: [0x5C, 0x22])
                case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                case 0x08: out.append(contentsOf: [0x5C, UInt8(ascii: "b")])
                case 0x0C: out.append(contentsOf: [0x5C, UInt8(ascii: "f")])
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(c >> 4)], hex[Int(c & 0xF)]])
                }
            }
            if runStart < utf8.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
        }
    }

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
