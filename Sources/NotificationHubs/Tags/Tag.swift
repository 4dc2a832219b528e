/// Tag rules of Notification Hubs (wire spec §8.1).
public enum Tag {
    /// Longest plain tag.
    public static let maximumLength = 120
    /// Most tags on one installation or registration.
    public static let maximumPerInstallation = 60

    /// The system tag that targets one installation.
    public static func installationId(_ id: String) -> String { "$InstallationId:{\(id)}" }
    /// The system tag that targets every installation of a user.
    public static func userId(_ id: String) -> String { "$UserId:{\(id)}" }

    /// Whether `byte` may appear in a plain tag: `A-Z a-z 0-9 _ @ # . : -`.
    public static func isTagByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "#"),
            UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// Whether `byte` may appear inside the braces of a system tag (`=` also allowed).
    static func isSystemIdByte(_ byte: UInt8) -> Bool {
        isTagByte(byte) || byte == UInt8(ascii: "=")
    }

    /// The system-tag prefixes, lower-cased, with their canonical spelling.
    static let systemPrefixes: [(lower: String, canonical: String)] = [
        ("$installationid:{", "$InstallationId:{"), ("$userid:{", "$UserId:{"),
    ]

    /// Checks one tag; returns it with a system prefix in its canonical case.
    @discardableResult
    public static func validate(_ tag: String) throws(TagError) -> String {
        if tag.hasPrefix("$") {
            let lower = tag.lowercased()
            guard let prefix = systemPrefixes.first(where: { lower.hasPrefix($0.lower) }) else {
                throw TagError(.invalid(tag))
            }
            guard tag.hasSuffix("}") else { throw TagError(.invalid(tag)) }
            let inner = tag.utf8.dropFirst(prefix.lower.utf8.count).dropLast()
            guard !inner.isEmpty, inner.count <= maximumLength, inner.allSatisfy(isSystemIdByte) else {
                throw TagError(.invalid(tag))
            }
            return prefix.canonical + String(decoding: inner, as: UTF8.self) + "}"
        }
        guard !tag.isEmpty else { throw TagError(.empty) }
        guard tag.utf8.count <= maximumLength else { throw TagError(.tooLong(tag)) }
        guard tag.utf8.allSatisfy(isTagByte) else { throw TagError(.invalid(tag)) }
        return tag
    }

    /// Refuses `$InstallationId:{…}` and `$UserId:{…}` among tags a client gives: the hub adds
    /// them itself from the installation's id and user, and a client that could claim another
    /// installation's system tag would receive what is sent to that installation alone.
    public static func refuseSystemTags(_ tags: [String]) throws(InstallationError) {
        if let system = tags.first(where: { $0.hasPrefix("$") }) {
            throw InstallationError(
                "the tag '\(system)' is a system tag; the hub adds $InstallationId and $UserId itself")
        }
    }

    /// Checks the tags of one installation or registration: each tag, at most 60, at most
    /// one `$InstallationId` and one `$UserId`. Returns them canonical and without duplicates.
    public static func validateList(_ tags: [String]) throws(TagError) -> [String] {
        var seen = Set<String>()
        var result: [String] = []
        var systemKinds = Set<String>()
        for tag in tags {
            let canonical = try validate(tag)
            if canonical.hasPrefix("$") {
                let kind = String(canonical.prefix { $0 != ":" })
                guard systemKinds.insert(kind).inserted else { throw TagError(.duplicateSystemTag(kind)) }
            }
            if seen.insert(canonical).inserted { result.append(canonical) }
        }
        guard result.count <= maximumPerInstallation else { throw TagError(.tooMany(result.count)) }
        return result
    }
}

/// Why a tag was refused. The description follows the service's wording.
public struct TagError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Code: Sendable, Equatable {
        case empty
        case invalid(String)
        case tooLong(String)
        case tooMany(Int)
        case duplicateSystemTag(String)
    }

    let code: Code

    init(_ code: Code) {
        self.code = code
    }

    public var description: String {
        switch code {
        case .empty:
            return "An empty tag was supplied."
        case .invalid(let tag):
            return
                "An invalid tag '\(tag)' was supplied. Valid tag characters are alphanumeric, _, @, -, ., : and #; system tags are $InstallationId:{id} and $UserId:{id}."
        case .tooLong(let tag):
            return "The tag '\(tag.prefix(30))…' is \(tag.utf8.count) characters long; at most \(Tag.maximumLength) are allowed."
        case .tooMany(let count):
            return
                "\(count) tags were supplied; at most \(Tag.maximumPerInstallation) are allowed per installation or registration."
        case .duplicateSystemTag(let kind):
            return "More than one \(kind) tag was supplied."
        }
    }
}
