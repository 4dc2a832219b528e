import Foundation

/// One JSON-Patch operation on an installation (wire spec §4.4).
public struct InstallationPatchOperation: Sendable, Hashable {
    public enum Op: String, Sendable, Hashable {
        case add, remove, replace
    }

    public var op: Op
    public var path: String
    /// Official SDKs always send strings (stringified JSON for objects and arrays).
    public var value: JSONValue?

    public init(op: Op, path: String, value: JSONValue? = nil) {
        self.op = op
        self.path = path
        self.value = value
    }

    public static func add(_ path: String, _ value: String) -> Self { .init(op: .add, path: path, value: .string(value)) }
    public static func replace(_ path: String, _ value: String) -> Self { .init(op: .replace, path: path, value: .string(value)) }
    public static func remove(_ path: String) -> Self { .init(op: .remove, path: path) }

    public var json: JSONValue {
        .object(dropping: [("op", .string(op.rawValue)), ("path", .string(path)), ("value", value)])
    }

    /// Reads a patch document: an array of `{op, path, value}`.
    public static func parseDocument(_ json: JSONValue) throws(InstallationError) -> [InstallationPatchOperation] {
        guard let elements = json.arrayValue else { throw InstallationError("a JSON-Patch body must be an array of operations") }
        var operations: [InstallationPatchOperation] = []
        for element in elements {
            let reader = try MemberReader(element, what: "patch operation")
            guard let opText = try reader.string("op"), let op = Op(rawValue: opText.lowercased()) else {
                throw InstallationError("a patch operation needs op add, remove or replace")
            }
            guard let path = try reader.string("path"), path.hasPrefix("/") else {
                throw InstallationError("a patch operation needs a path starting with '/'")
            }
            let value = reader["value"]
            if op != .remove, value == nil || value!.isNull {
                throw InstallationError("the \(op.rawValue) operation on \(path) needs a value")
            }
            operations.append(.init(op: op, path: path, value: value))
        }
        return operations
    }
}

extension Installation {
    /// Applies patch operations in order; on any error nothing is changed.
    public mutating func apply(_ operations: [InstallationPatchOperation]) throws(InstallationError) {
        var copy = self
        for operation in operations {
            try copy.apply(operation)
        }
        self = copy
    }

    private mutating func apply(_ operation: InstallationPatchOperation) throws(InstallationError) {
        let segments = operation.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
        }
        guard let head = segments.first?.lowercased() else { throw InstallationError("the patch path is empty") }
        let rest = Array(segments.dropFirst())
        let op = operation.op
        switch (head, rest.count) {
        case ("pushchannel", 0):
            if op == .remove { throw InstallationError("pushChannel cannot be removed") }
            pushChannel = .handle(try Self.stringValue(operation))
            pushChannelExpired = false
        case ("userid", 0), ("user", 0):
            userId = op == .remove ? nil : try Self.stringValue(operation)
        case ("tags", 0):
            switch op {
            case .remove: tags = nil
            case .replace: tags = try Self.stringList(operation)
            case .add: tags = Self.appending(try Self.stringList(operation), to: tags)
            }
        case ("tags", 1):
            guard op == .remove else {
                throw InstallationError("use add on /tags to add a tag; /tags/{tag} only supports remove")
            }
            tags = tags?.filter { $0 != rest[0] }
            if tags?.isEmpty == true { tags = nil }
        case ("pushvariables", 0):
            if op == .remove { pushVariables = nil } else { pushVariables = try Self.stringMapValue(operation) }
        case ("pushvariables", 1):
            var variables = pushVariables ?? [:]
            variables[rest[0]] = op == .remove ? nil : try Self.stringValue(operation)
            pushVariables = variables.isEmpty ? nil : variables
        case ("templates", 1):
            var all = templates ?? [:]
            if op == .remove {
                all[rest[0]] = nil
            } else {
                all[rest[0]] = try InstallationTemplate(json: try Self.objectValue(operation), name: rest[0])
            }
            templates = all.isEmpty ? nil : all
        case ("templates", 2), ("templates", 3):
            var all = templates ?? [:]
            guard var template = all[rest[0]] else { throw InstallationError("the installation has no template '\(rest[0])'") }
            try template.apply(
                op: op, field: rest[1].lowercased(), element: rest.count == 3 ? rest[2] : nil, operation: operation)
            all[rest[0]] = template
            templates = all
        case ("secondarytiles", _):
            throw InstallationError("secondaryTiles patches are not supported by this hub")
        default:
            throw InstallationError("the patch path \(operation.path) is not supported")
        }
    }

    static func stringValue(_ operation: InstallationPatchOperation) throws(InstallationError) -> String {
        switch operation.value {
        case .string(let s)?: return s
        case .number(let n)?: return n
        default: throw InstallationError("the value for \(operation.path) must be a string")
        }
    }

    /// A tag list from a value that is a tag, a JSON array, or a string holding a JSON array.
    static func stringList(_ operation: InstallationPatchOperation) throws(InstallationError) -> [String] {
        var value = operation.value ?? .null
        if case .string(let s) = value, s.hasPrefix("[") {
            guard let parsed = try? JSONValue(parsing: s) else {
                throw InstallationError("the value for \(operation.path) is not a JSON array")
            }
            value = parsed
        }
        switch value {
        case .string(let s): return [s]
        case .array(let elements):
            var result: [String] = []
            for element in elements {
                guard let s = element.stringValue else {
                    throw InstallationError("the value for \(operation.path) must hold strings")
                }
                result.append(s)
            }
            return result
        default: throw InstallationError("the value for \(operation.path) must be a tag or an array of tags")
        }
    }

    static func objectValue(_ operation: InstallationPatchOperation) throws(InstallationError) -> JSONValue {
        switch operation.value {
        case .object?: return operation.value!
        case .string(let s)?:
            guard let parsed = try? JSONValue(parsing: s), parsed.objectMembers != nil else {
                throw InstallationError("the value for \(operation.path) must be a JSON object (or a string holding one)")
            }
            return parsed
        default: throw InstallationError("the value for \(operation.path) must be a JSON object")
        }
    }

    static func stringMapValue(_ operation: InstallationPatchOperation) throws(InstallationError) -> [String: String] {
        let object = try objectValue(operation)
        var result: [String: String] = [:]
        for (key, value) in object.objectMembers ?? [] {
            guard let s = value.stringValue else {
                throw InstallationError("the value for \(operation.path) must map names to strings")
            }
            result[key] = s
        }
        return result
    }

    static func appending(_ new: [String], to existing: [String]?) -> [String] {
        var result = existing ?? []
        for tag in new where !result.contains(tag) { result.append(tag) }
        return result
    }
}

extension InstallationTemplate {
    fileprivate mutating func apply(
        op: InstallationPatchOperation.Op, field: String, element: String?, operation: InstallationPatchOperation
    ) throws(InstallationError) {
        switch (field, element) {
        case ("body", nil):
            guard op != .remove else { throw InstallationError("a template body cannot be removed") }
            body = try Installation.stringValue(operation)
        case ("headers", nil):
            headers = op == .remove ? nil : try Installation.stringMapValue(operation)
        case ("expiry", nil):
            expiry = op == .remove ? nil : try Installation.stringValue(operation)
        case ("tags", nil):
            switch op {
            case .remove: tags = nil
            case .replace: tags = try Installation.stringList(operation)
            case .add: tags = Installation.appending(try Installation.stringList(operation), to: tags)
            }
        case ("tags", let tag?):
            guard op == .remove else { throw InstallationError("template tags/{tag} only supports remove") }
            tags = tags?.filter { $0 != tag }
        default:
            throw InstallationError("the patch path \(operation.path) is not supported")
        }
    }
}
