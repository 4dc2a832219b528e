import Synchronization

/// A JSON template body compiled once and rendered many times.
///
/// Expressions are recognised only as whole JSON string values (never keys, never inside
/// other text); everything else is copied. Substituted text is JSON-escaped, so every
/// rendering is valid JSON whatever the properties hold.
public struct Template: Sendable, Hashable {
    enum Segment: Sendable, Hashable {
        case literal([UInt8])
        case expression(TemplateExpression)
    }

    let segments: [Segment]
    /// The body as given.
    public let body: String

    /// Compiles a JSON template body.
    public init(body: String) throws(TemplateError) {
        let json: JSONValue
        do {
            json = try JSONValue(parsing: body)
        } catch {
            throw TemplateError(.body("the template body is not valid JSON (\(error))"))
        }
        var builder = SegmentBuilder()
        try builder.add(json)
        self.segments = builder.finish()
        self.body = body
    }

    /// A compiled template from a cache of recent bodies: installations share a handful of
    /// template bodies, so each is parsed once, not once per registration.
    public static func compiled(body: String) throws(TemplateError) -> Template {
        if let known = TemplateCache.shared.get(body) { return known }
        let template = try Template(body: body)
        TemplateCache.shared.put(template)
        return template
    }

    /// Renders the payload for one set of properties.
    public func render(_ properties: TemplateProperties) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(body.utf8.count + 64)
        render(properties, into: &out)
        return out
    }

    /// Appends the payload for one set of properties to `out`.
    public func render(_ properties: TemplateProperties, into out: inout [UInt8]) {
        for segment in segments {
            switch segment {
            case .literal(let bytes):
                out.append(contentsOf: bytes)
            case .expression(let expression):
                let value = expression.evaluate(properties)
                if expression.isNumeric, TemplateExpression.isBareNumber(value) {
                    out.append(contentsOf: value.utf8)
                } else {
                    JSONValue.writeString(value, to: &out)
                }
            }
        }
    }

    /// Renders a single string that may itself be an expression (a template's `expiry`, a
    /// header value); literal text is returned as it is.
    public static func renderString(_ text: String, _ properties: TemplateProperties) throws(TemplateError) -> String {
        guard TemplateExpression.looksLikeExpression(text) else { return text }
        return try TemplateExpression(parsing: text).evaluate(properties)
    }
}

private struct SegmentBuilder {
    var segments: [Template.Segment] = []
    var pending: [UInt8] = []

    mutating func add(_ value: JSONValue) throws(TemplateError) {
        switch value {
        case .string(let s) where TemplateExpression.looksLikeExpression(s):
            let expression = try TemplateExpression(parsing: s)
            if !pending.isEmpty {
                segments.append(.literal(pending))
                pending = []
            }
            segments.append(.expression(expression))
        case .array(let elements):
            pending.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { pending.append(UInt8(ascii: ",")) }
                try add(element)
            }
            pending.append(UInt8(ascii: "]"))
        case .object(let members):
            pending.append(UInt8(ascii: "{"))
            for (i, (key, element)) in members.enumerated() {
                if i > 0 { pending.append(UInt8(ascii: ",")) }
                JSONValue.writeString(key, to: &pending)
                pending.append(UInt8(ascii: ":"))
                try add(element)
            }
            pending.append(UInt8(ascii: "}"))
        default:
            value.write(to: &pending)
        }
    }

    mutating func finish() -> [Template.Segment] {
        if !pending.isEmpty { segments.append(.literal(pending)) }
        return segments
    }
}

/// Why a template, an expression or a set of template properties was refused.
public struct TemplateError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Code: Sendable, Equatable {
        case body(String)
        case expression(String, String)
        case properties(String)
    }

    let code: Code

    init(_ code: Code) {
        self.code = code
    }

    public var description: String {
        switch code {
        case .body(let why): return why
        case .expression(let text, let why): return "the template expression '\(text)' is invalid: \(why)"
        case .properties(let why): return why
        }
    }
}

/// Recently compiled templates, by body.
final class TemplateCache: Sendable {
    static let shared = TemplateCache()
    static let capacity = 1024
    private let templates = Mutex<[String: Template]>([:])

    func get(_ body: String) -> Template? { templates.withLock { $0[body] } }

    func put(_ template: Template) {
        templates.withLock { templates in
            if templates.count >= Self.capacity { templates.removeAll(keepingCapacity: true) }
            templates[template.body] = template
        }
    }
}
