/// One template expression (wire spec §9.2): `$(p)`, `$(p,n)`, `.(p,n)`, `%(p)`, `#(p)`, or a
/// concatenation `{a + b + …}` of those and quoted literals.
public struct TemplateExpression: Sendable, Hashable {
    public enum Function: Character, Sendable, Hashable {
        /// `$(p)`, `$(p,n)`: the text, clipped to n characters.
        case text = "$"
        /// `.(p,n)`: clipped with `...` so the whole is at most n characters.
        case ellipsis = "."
        /// `%(p)`: percent-encoded.
        case uri = "%"
        /// `#(p)`: a bare JSON number when the value is one.
        case number = "#"
    }

    public enum Term: Sendable, Hashable {
        /// A property reference; `name` is lower-cased (property names are case-insensitive).
        case property(Function, name: String, length: Int?)
        case literal(String)
    }

    public let terms: [Term]

    /// Whether this is a lone `#(p)`, whose value may be emitted as a number.
    public var isNumeric: Bool {
        if terms.count == 1, case .property(.number, _, _) = terms[0] { return true }
        return false
    }

    /// Longest property name.
    public static let maximumNameLength = 120

    /// Whether `text` is meant as an expression: a function call `$(…`, `#(…`, `.(…`, `%(…`
    /// ending in `)`, or a braced concatenation. Other strings are literal text.
    public static func looksLikeExpression(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard let first = utf8.first, let last = utf8.last else { return false }
        if first == UInt8(ascii: "{") { return last == UInt8(ascii: "}") }
        guard utf8.count >= 2, last == UInt8(ascii: ")") else { return false }
        let second = utf8[utf8.index(after: utf8.startIndex)]
        return second == UInt8(ascii: "(") && "$#.%".utf8.contains(first)
    }

    /// Parses an expression.
    public init(parsing text: String) throws(TemplateError) {
        var scanner = ExpressionScanner(text: text)
        scanner.skipSpace()
        if scanner.peek == "{" {
            scanner.advance()
            var terms: [Term] = []
            repeat {
                scanner.skipSpace()
                terms.append(try scanner.parseTerm(in: text))
                scanner.skipSpace()
            } while scanner.consume("+")
            guard scanner.consume("}") else {
                throw TemplateError(.expression(text, "expected '+' or '}' at position \(scanner.offset + 1)"))
            }
            scanner.skipSpace()
            guard scanner.atEnd else {
                throw TemplateError(.expression(text, "unexpected text after '}'"))
            }
            if terms.count > 1,
                terms.contains(where: { if case .property(.number, _, _) = $0 { return true } else { return false } })
            {
                throw TemplateError(.expression(text, "#() cannot be concatenated with other terms"))
            }
            self.terms = terms
        } else {
            let term = try scanner.parseTerm(in: text)
            guard case .property = term else {
                throw TemplateError(.expression(text, "a literal must be inside a {…} concatenation"))
            }
            scanner.skipSpace()
            guard scanner.atEnd else { throw TemplateError(.expression(text, "unexpected text after ')'")) }
            self.terms = [term]
        }
    }

    /// The text of the expression for a set of properties (missing ones are empty).
    public func evaluate(_ properties: TemplateProperties) -> String {
        if terms.count == 1 { return Self.evaluate(terms[0], properties) }
        var out = ""
        for term in terms { out += Self.evaluate(term, properties) }
        return out
    }

    static func evaluate(_ term: Term, _ properties: TemplateProperties) -> String {
        switch term {
        case .literal(let text):
            return text
        case .property(let function, let name, let length):
            let value = properties[lowercasedName: name] ?? ""
            switch function {
            case .text, .number:
                guard let length, value.count > length else { return value }
                return String(value.prefix(length))
            case .ellipsis:
                guard let length, value.count > length else { return value }
                return String(value.prefix(max(0, length - 3))) + "..."
            case .uri:
                return PercentEncoding.encode(value, uppercaseHex: true)
            }
        }
    }

    /// Whether `value` is a JSON number in the form `#()` emits bare:
    /// `(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    public static func isBareNumber(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        var i = 0
        func digits() -> Int {
            let start = i
            while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
            return i - start
        }
        guard !bytes.isEmpty else { return false }
        if bytes[0] == UInt8(ascii: "0") {
            i = 1
        } else if digits() == 0 {
            return false
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { return false }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { return false }
        }
        return i == bytes.count
    }
}

private struct ExpressionScanner {
    let characters: [Character]
    var offset = 0

    init(text: String) {
        characters = Array(text)
    }

    var atEnd: Bool { offset >= characters.count }
    var peek: Character? { atEnd ? nil : characters[offset] }

    mutating func advance() { offset += 1 }

    mutating func skipSpace() {
        while let c = peek, c == " " || c == "\t" { advance() }
    }

    mutating func consume(_ c: Character) -> Bool {
        guard peek == c else { return false }
        advance()
        return true
    }

    mutating func parseTerm(in text: String) throws(TemplateError) -> TemplateExpression.Term {
        guard let c = peek else { throw TemplateError(.expression(text, "a term is missing at the end")) }
        if c == "'" || c == "\"" {
            advance()
            var literal = ""
            while true {
                guard let d = peek else { throw TemplateError(.expression(text, "a quoted literal is not closed")) }
                advance()
                if d == c {
                    if peek == c {
                        literal.append(c)
                        advance()
                    } else {
                        return .literal(literal)
                    }
                } else {
                    literal.append(d)
                }
            }
        }
        guard let function = TemplateExpression.Function(rawValue: c) else {
            throw TemplateError(.expression(text, "expected $(, #(, .(, %( or a quoted literal at position \(offset + 1)"))
        }
        advance()
        guard consume("(") else { throw TemplateError(.expression(text, "expected '(' after '\(c)'")) }
        skipSpace()
        var name = ""
        while let d = peek, d.isASCII, d.isLetter || d.isNumber || d == "_" {
            name.append(d)
            advance()
        }
        guard !name.isEmpty else {
            throw TemplateError(.expression(text, "a property name (letters, digits, _) is missing at position \(offset + 1)"))
        }
        guard name.count <= TemplateExpression.maximumNameLength else {
            throw TemplateError(
                .expression(text, "the property name is longer than \(TemplateExpression.maximumNameLength) characters"))
        }
        skipSpace()
        var length: Int?
        if consume(",") {
            skipSpace()
            var number = ""
            while let d = peek, d.isASCII, d.isNumber {
                number.append(d)
                advance()
            }
            guard let n = Int(number), n > 0 else {
                throw TemplateError(.expression(text, "the length after ',' must be a positive integer"))
            }
            guard function == .text || function == .ellipsis else {
                throw TemplateError(.expression(text, "\(c)() takes no length"))
            }
            length = n
            skipSpace()
        }
        if function == .ellipsis, length == nil {
            throw TemplateError(.expression(text, ".() needs a length: .(\(name), n)"))
        }
        guard consume(")") else {
            throw TemplateError(.expression(text, "expected ')' at position \(offset + 1)"))
        }
        return .property(function, name: name.lowercased(), length: length)
    }
}

/// Template properties of one send, looked up case-insensitively.
public struct TemplateProperties: Sendable, Hashable {
    private var storage: [String: String]

    public init(_ properties: [String: String]) {
        var storage: [String: String] = [:]
        for (key, value) in properties { storage[key.lowercased()] = value }
        self.storage = storage
    }

    /// Reads a template send body: a flat JSON object whose values are strings (numbers and
    /// booleans are taken as their text; objects and arrays are refused).
    public init(json: JSONValue) throws(TemplateError) {
        guard let members = json.objectMembers else {
            throw TemplateError(.properties("the body must be a JSON object of string properties"))
        }
        var properties: [String: String] = [:]
        for (key, value) in members {
            switch value {
            case .string(let s): properties[key] = s
            case .number(let n): properties[key] = n
            case .bool(let b): properties[key] = b ? "true" : "false"
            case .null: properties[key] = ""
            case .array, .object:
                throw TemplateError(.properties("the property '\(key)' must be a string, not an object or array"))
            }
        }
        self.init(properties)
    }

    public subscript(name: String) -> String? { storage[name.lowercased()] }

    subscript(lowercasedName name: String) -> String? { storage[name] }
}
