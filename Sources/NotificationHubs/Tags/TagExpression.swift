/// A boolean expression over tags, as sent in `ServiceBusNotification-Tags`:
/// `!` binds tighter than `&&`, which binds tighter than `||`; parentheses group.
public indirect enum TagExpression: Sendable, Hashable, CustomStringConvertible {
    case tag(String)
    case not(TagExpression)
    case and([TagExpression])
    case or([TagExpression])

    /// At most this many tags when the expression uses only `||`.
    public static let maximumTagsOrOnly = 20
    /// At most this many tags when the expression uses `&&` or `!`.
    public static let maximumTags = 6
    /// At most this many `!` and `(` nested inside one another: six tags never need more,
    /// and the parser and every walk over the tree recurse once per level.
    public static let maximumDepth = 16
    /// The longest header accepted: twenty system tags at their longest with operators.
    public static let maximumLength = 8192

    /// Whether a holder of `tags` matches.
    public func matches(_ tags: Set<String>) -> Bool {
        evaluate { tags.contains($0) }
    }

    /// Evaluates with `has` answering whether a tag is present.
    public func evaluate(_ has: (String) -> Bool) -> Bool {
        switch self {
        case .tag(let tag): return has(tag)
        case .not(let inner): return !inner.evaluate(has)
        case .and(let terms): return terms.allSatisfy { $0.evaluate(has) }
        case .or(let terms): return terms.contains { $0.evaluate(has) }
        }
    }

    /// Every tag occurrence, left to right.
    public var tags: [String] {
        switch self {
        case .tag(let tag): return [tag]
        case .not(let inner): return inner.tags
        case .and(let terms), .or(let terms): return terms.flatMap(\.tags)
        }
    }

    /// Whether `&&` or `!` appears anywhere.
    public var usesAndOrNot: Bool {
        switch self {
        case .tag: return false
        case .not: return true
        case .and: return true
        case .or(let terms): return terms.contains(where: \.usesAndOrNot)
        }
    }

    /// The expression in compact form, with parentheses only where needed.
    public var description: String { render(parentPrecedence: 0) }

    private var precedence: Int {
        switch self {
        case .or: return 1
        case .and: return 2
        case .not: return 3
        case .tag: return 4
        }
    }

    private func render(parentPrecedence: Int) -> String {
        let text: String
        switch self {
        case .tag(let tag): text = tag
        case .not(let inner): text = "!" + inner.render(parentPrecedence: 3)
        case .and(let terms): text = terms.map { $0.render(parentPrecedence: 2) }.joined(separator: "&&")
        case .or(let terms): text = terms.map { $0.render(parentPrecedence: 1) }.joined(separator: "||")
        }
        return precedence < parentPrecedence ? "(\(text))" : text
    }
}

extension TagExpression {
    /// Parses and validates an expression: tag charset and length, system tags, and the
    /// limits of 20 tags with only `||`, otherwise 6.
    public init(parsing text: String) throws(TagExpressionError) {
        guard text.utf8.count <= Self.maximumLength else {
            throw TagExpressionError(
                column: 1, "the expression is \(text.utf8.count) bytes long; at most \(Self.maximumLength) are allowed")
        }
        var parser = TagExpressionParser(text: text)
        let expression = try parser.parseExpression()
        if let extra = try parser.peek() {
            throw TagExpressionError(column: extra.column, "unexpected '\(extra.text)' after the end of the expression")
        }
        let count = expression.tags.count
        if expression.usesAndOrNot, count > Self.maximumTags {
            throw TagExpressionError(
                column: 1,
                "the expression has \(count) tags; at most \(Self.maximumTags) are allowed when it uses && or !")
        }
        if count > Self.maximumTagsOrOnly {
            throw TagExpressionError(
                column: 1, "the expression has \(count) tags; at most \(Self.maximumTagsOrOnly) are allowed")
        }
        self = expression
    }
}

/// Why a tag expression was refused, and where (1-based column).
public struct TagExpressionError: Error, Sendable, Equatable, CustomStringConvertible {
    public let column: Int
    public let message: String

    init(column: Int, _ message: String) {
        self.column = column
        self.message = message
    }

    public var description: String { "invalid tag expression at column \(column): \(message)" }
}

private struct TagExpressionParser {
    enum Kind: Equatable {
        case tag(String)
        case not, and, or, open, close
    }

    struct Token {
        let kind: Kind
        let column: Int
        let text: String
    }

    let bytes: [UInt8]
    var position = 0
    var lookahead: Token?
    /// `!` and `(` open around the current position.
    var depth = 0

    init(text: String) {
        bytes = Array(text.utf8)
    }

    mutating func peek() throws(TagExpressionError) -> Token? {
        if lookahead == nil { lookahead = try lex() }
        return lookahead
    }

    mutating func next() throws(TagExpressionError) -> Token? {
        let token = try peek()
        lookahead = nil
        return token
    }

    /// Column of the next unread character (1-based), for errors at the end.
    var endColumn: Int { bytes.count + 1 }

    mutating func lex() throws(TagExpressionError) -> Token? {
        while position < bytes.count, bytes[position] == UInt8(ascii: " ") || bytes[position] == UInt8(ascii: "\t") {
            position += 1
        }
        guard position < bytes.count else { return nil }
        let start = position
        let column = start + 1
        let c = bytes[position]
        func two(_ second: UInt8, _ kind: Kind, _ text: String) throws(TagExpressionError) -> Token {
            guard position + 1 < bytes.count, bytes[position + 1] == second else {
                throw TagExpressionError(column: column, "'\(Character(Unicode.Scalar(c)))' must be doubled: use \(text)")
            }
            position += 2
            return Token(kind: kind, column: column, text: text)
        }
        switch c {
        case UInt8(ascii: "("):
            position += 1
            return Token(kind: .open, column: column, text: "(")
        case UInt8(ascii: ")"):
            position += 1
            return Token(kind: .close, column: column, text: ")")
        case UInt8(ascii: "!"):
            position += 1
            return Token(kind: .not, column: column, text: "!")
        case UInt8(ascii: "&"): return try two(UInt8(ascii: "&"), .and, "&&")
        case UInt8(ascii: "|"): return try two(UInt8(ascii: "|"), .or, "||")
        case UInt8(ascii: "$"):
            guard let close = bytes[position...].firstIndex(of: UInt8(ascii: "}")) else {
                throw TagExpressionError(column: column, "a system tag must look like $InstallationId:{id} or $UserId:{id}")
            }
            position = close + 1
        default:
            guard Tag.isTagByte(c) else {
                let shown = String(decoding: bytes[position...].prefix(4), as: UTF8.self).first.map(String.init) ?? "?"
                throw TagExpressionError(
                    column: column,
                    "'\(shown)' is not allowed; tags use letters, digits and _ @ # . : - and operators are && || ! ( )")
            }
            while position < bytes.count, Tag.isTagByte(bytes[position]) { position += 1 }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        do {
            let tag = try Tag.validate(text)
            return Token(kind: .tag(tag), column: column, text: text)
        } catch {
            throw TagExpressionError(column: column, error.description)
        }
    }

    /// `a || (b || c)` reads as `a || b || c`, and `&&` likewise: one expression has one tree,
    /// the one its `description` reads back to.
    mutating func parseExpression() throws(TagExpressionError) -> TagExpression {
        var terms: [TagExpression] = []
        repeat {
            switch try parseAnd() {
            case .or(let inner): terms += inner
            case let term: terms.append(term)
            }
        } while try consume(.or)
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    mutating func parseAnd() throws(TagExpressionError) -> TagExpression {
        var terms: [TagExpression] = []
        repeat {
            switch try parseUnary() {
            case .and(let inner): terms += inner
            case let term: terms.append(term)
            }
        } while try consume(.and)
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    /// Takes the next token when it is `kind`.
    mutating func consume(_ kind: Kind) throws(TagExpressionError) -> Bool {
        guard try peek()?.kind == kind else { return false }
        _ = try next()
        return true
    }

    mutating func parseUnary() throws(TagExpressionError) -> TagExpression {
        guard let token = try next() else {
            throw TagExpressionError(column: endColumn, bytes.isEmpty ? "the expression is empty" : "a tag is missing at the end")
        }
        switch token.kind {
        case .not, .open:
            guard depth < TagExpression.maximumDepth else {
                throw TagExpressionError(
                    column: token.column, "'\(token.text)' nests more than \(TagExpression.maximumDepth) levels deep")
            }
        default:
            break
        }
        switch token.kind {
        case .not:
            depth += 1
            defer { depth -= 1 }
            return .not(try parseUnary())
        case .open:
            depth += 1
            defer { depth -= 1 }
            let inner = try parseExpression()
            guard let close = try next() else {
                throw TagExpressionError(column: token.column, "this '(' is never closed")
            }
            guard close.kind == .close else {
                throw TagExpressionError(column: close.column, "expected ')' but found '\(close.text)'")
            }
            return inner
        case .tag(let tag):
            return .tag(tag)
        case .and, .or, .close:
            throw TagExpressionError(column: token.column, "expected a tag, '!' or '(' but found '\(token.text)'")
        }
    }
}
