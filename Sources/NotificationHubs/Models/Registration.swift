/// A legacy (Atom XML) Apple registration, native or template (wire spec §5).
public struct Registration: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case appleNative = "AppleRegistrationDescription"
        case appleTemplate = "AppleTemplateRegistrationDescription"
    }

    public var kind: Kind
    public var registrationId: String?
    /// The entity tag, a number as text (`1`, `2`, …).
    public var etag: String?
    public var expirationTime: String?
    public var tags: [String]
    public var pushVariables: [String: String]?
    public var deviceToken: String
    public var bodyTemplate: String?
    public var expiry: String?
    public var templateName: String?
    public var priority: String?
    public var apnsHeaders: [String: String]

    public init(
        kind: Kind, deviceToken: String, tags: [String] = [], bodyTemplate: String? = nil, templateName: String? = nil,
        registrationId: String? = nil
    ) {
        self.kind = kind
        self.deviceToken = deviceToken
        self.tags = tags
        self.bodyTemplate = bodyTemplate
        self.templateName = templateName
        self.registrationId = registrationId
        self.apnsHeaders = [:]
    }

    /// Namespace of registration descriptions and notification outcomes.
    public static let servicebusNamespace = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
    static let instanceNamespace = "http://www.w3.org/2001/XMLSchema-instance"
    static let atomNamespace = "http://www.w3.org/2005/Atom"
    static let metadataNamespace = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"
}

extension Registration {
    /// Reads a registration from an Atom entry (or a bare description element).
    public init(atom text: String) throws(InstallationError) {
        let root: XMLNode
        do { root = try XMLNode(parsing: text) } catch { throw InstallationError("the registration is not valid XML: \(error)") }
        try self.init(node: root)
    }

    /// Reads a registration from a parsed entry or description element.
    public init(node root: XMLNode) throws(InstallationError) {
        let candidates =
            [root] + [root.descendant(Kind.appleTemplate.rawValue), root.descendant(Kind.appleNative.rawValue)].compactMap { $0 }
        guard let description = candidates.first(where: { Kind(rawValue: $0.name) != nil }),
            let kind = Kind(rawValue: description.name)
        else {
            let found = root.descendant("content")?.children.first?.name ?? root.name
            throw InstallationError(
                "'\(found)' is not supported: this hub takes AppleRegistrationDescription and AppleTemplateRegistrationDescription"
            )
        }
        func field(_ name: String) -> String? {
            guard let node = description.child(name), !node.isNil else { return nil }
            let value = node.text.trimmingCharactersInWhitespace()
            return value.isEmpty ? nil : value
        }
        self.kind = kind
        guard let token = field("DeviceToken") else { throw InstallationError("the registration has no DeviceToken") }
        self.deviceToken = token
        self.registrationId = field("RegistrationId")
        self.etag = field("ETag")
        self.expirationTime = field("ExpirationTime")
        self.tags = (field("Tags") ?? "").split(separator: ",").map { $0.trimmingCharactersInWhitespace() }.filter { !$0.isEmpty }
        self.bodyTemplate = description.child("BodyTemplate").map { $0.text.trimmingCharactersInWhitespace() }
        self.expiry = field("Expiry")
        self.templateName = field("TemplateName")
        self.priority = field("Priority")
        var headers: [String: String] = [:]
        for header in description.child("ApnsHeaders")?.children("ApnsHeader") ?? [] {
            if let name = header.child("Header")?.text, let value = header.child("Value")?.text { headers[name] = value }
        }
        self.apnsHeaders = headers
        if let variables = description.child("PushVariables"), !variables.isNil {
            let text = variables.text.trimmingCharactersInWhitespace()
            if !text.isEmpty, let json = try? JSONValue(parsing: text), let members = json.objectMembers {
                self.pushVariables = Dictionary(
                    members.compactMap { key, value in value.stringValue.map { (key, $0) } }, uniquingKeysWith: { $1 })
            }
        }
    }

    /// The description element, members in the order .NET's DataContractSerializer needs.
    public var descriptionXML: String {
        var xml = "<\(kind.rawValue) xmlns=\"\(Self.servicebusNamespace)\" xmlns:i=\"\(Self.instanceNamespace)\">"
        func element(_ name: String, _ value: String?) {
            if let value { xml += "<\(name)>\(XMLNode.escape(value))</\(name)>" }
        }
        element("ETag", etag)
        element("ExpirationTime", expirationTime)
        element("RegistrationId", registrationId)
        if !tags.isEmpty { element("Tags", tags.joined(separator: ",")) }
        if let pushVariables, !pushVariables.isEmpty {
            element(
                "PushVariables",
                JSONValue.object(pushVariables.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).text)
        }
        element("DeviceToken", deviceToken)
        if kind == .appleTemplate {
            xml += "<BodyTemplate>\(XMLNode.cdata(bodyTemplate ?? ""))</BodyTemplate>"
            if let expiry { element("Expiry", expiry) } else { xml += "<Expiry i:nil=\"true\"/>" }
            element("TemplateName", templateName)
            element("Priority", priority)
            if apnsHeaders.isEmpty {
                xml += "<ApnsHeaders/>"
            } else {
                xml += "<ApnsHeaders>"
                for (name, value) in apnsHeaders.sorted(by: { $0.key < $1.key }) {
                    xml +=
                        "<ApnsHeader><Header>\(XMLNode.escape(name))</Header><Value>\(XMLNode.escape(value))</Value></ApnsHeader>"
                }
                xml += "</ApnsHeaders>"
            }
        }
        xml += "</\(kind.rawValue)>"
        return xml
    }

    /// The request body a client sends to create or update this registration.
    public var requestEntryXML: String {
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><entry xmlns=\"\(Self.atomNamespace)\"><content type=\"application/xml\">\(descriptionXML)</content></entry>"
    }

    /// The Atom entry the service returns, without the XML declaration.
    /// - Parameters:
    ///   - selfURL: `https://host/hub/registrations/{id}?api-version=…`
    ///   - updated: W3C time of the last change.
    public func responseEntryXML(selfURL: String, published: String, updated: String) -> String {
        let id = registrationId ?? ""
        let etagAttribute = XMLNode.escape("W/\"\(etag ?? "1")\"")
        return "<entry xmlns=\"\(Self.atomNamespace)\" a:etag=\"\(etagAttribute)\" xmlns:a=\"\(Self.metadataNamespace)\">"
            + "<id>\(XMLNode.escape(selfURL))</id><title type=\"text\">\(XMLNode.escape(id))</title>"
            + "<published>\(published)</published><updated>\(updated)</updated>"
            + "<link rel=\"self\" href=\"\(XMLNode.escape(selfURL))\"/>"
            + "<content type=\"application/xml\">\(descriptionXML)</content></entry>"
    }

    /// The Atom feed of a list of registrations.
    public static func feedXML(selfURL: String, updated: String, entries: [String]) -> String {
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><feed xmlns=\"\(atomNamespace)\"><title type=\"text\">Registrations</title>"
            + "<id>\(XMLNode.escape(selfURL))</id><updated>\(updated)</updated>"
            + "<link rel=\"self\" href=\"\(XMLNode.escape(selfURL))\"/>" + entries.joined() + "</feed>"
    }

    /// Reads the registrations of an Atom feed.
    public static func parseFeed(_ text: String) throws(InstallationError) -> [Registration] {
        let root: XMLNode
        do { root = try XMLNode(parsing: text) } catch { throw InstallationError("the feed is not valid XML: \(error)") }
        var result: [Registration] = []
        for entry in root.children("entry") {
            result.append(try Registration(node: entry))
        }
        return result
    }
}

extension StringProtocol {
    func trimmingCharactersInWhitespace() -> String {
        var s = Substring(self)
        while let first = s.first, first.isWhitespace { s = s.dropFirst() }
        while let last = s.last, last.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
