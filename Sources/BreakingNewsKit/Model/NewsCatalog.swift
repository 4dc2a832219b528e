import Foundation
import NotificationHubs

/// A breaking-news category: a tag on the hub, a switch on the screen.
public struct Category: Sendable, Hashable, CustomStringConvertible {
    public let name: String

    public init(_ name: String) {
        self.name = name
    }

    public var description: String { name }

    /// The tag this category is on the hub.
    public var tag: String { name }
}

/// What the product reads from `Resources/`: the categories in screen order, the template the
/// terminal registers, and the help text.
public struct NewsCatalog: Sendable {
    public let categories: [Category]
    /// `simpleAPNSTemplate`
    public let templateName: String
    /// `{"aps":{"alert":"$(messageParam)"}}`
    public let templateBody: String
    public let helpText: String

    /// Loads the catalog from the resource files.
    public init(resources: ResourceFiles) throws {
        let categoriesJSON = try JSONValue(parsing: resources.data("categories.json"))
        guard let names = categoriesJSON.arrayValue?.compactMap(\.stringValue), !names.isEmpty else {
            throw ResourceError(description: "\(resources.directory.path)/categories.json must be a JSON array of category names")
        }
        for name in names {
            do { try Tag.validate(name) } catch {
                throw ResourceError(description: "the category '\(name)' in categories.json is not a valid tag: \(error)")
            }
        }
        categories = names.map(Category.init)
        templateName = "simpleAPNSTemplate"
        templateBody = try resources.text("\(templateName).json").trimmingCharacters(in: .whitespacesAndNewlines)
        do { _ = try Template(body: templateBody) } catch {
            throw ResourceError(description: "\(templateName).json is not a valid template: \(error)")
        }
        helpText = try resources.text("help.txt")
    }

    /// The catalog of this process, loaded once.
    public static let shared: Result<NewsCatalog, Error> = Result {
        try NewsCatalog(resources: ResourceFiles.shared.get())
    }

    /// The catalog, or the reason it cannot be loaded.
    public static func load() throws -> NewsCatalog { try shared.get() }

    /// The category with this name, compared ignoring case.
    public func category(named name: String) -> Category? {
        categories.first { $0.name.lowercased() == name.lowercased() }
    }

    /// The categories of `names` (any case) in screen order; an unknown name is refused.
    public func resolve(_ names: [String]) throws(SubscribeError) -> [Category] {
        var chosen = Set<String>()
        for name in names {
            guard let category = category(named: name) else {
                throw SubscribeError(
                    description: "'\(name)' is not a category; choose from \(categories.map(\.name).joined(separator: ", "))")
            }
            chosen.insert(category.name)
        }
        return categories.filter { chosen.contains($0.name) }
    }

    /// The two halves around the category's name in a message.
    static let messagePrefix = "Breaking "
    static let messageInfix = " News : "

    /// The `messageParam` of one category's breaking news: `Breaking <Category> News : <text>`.
    public static func message(_ text: String, category: Category) -> String {
        messagePrefix + category.name + messageInfix + text
    }

    /// The news of a message without the `Breaking <category> News : ` that `message` put
    /// before it, for a list whose category column already says it; other text unchanged.
    public static func headline(_ text: String, category: String) -> String {
        let prefix = messagePrefix + category + messageInfix
        return text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text
    }

    /// The category a message names, read back from the shape `message` writes.
    public func category(ofMessage text: String) -> Category? {
        guard text.hasPrefix(Self.messagePrefix), let infix = text.range(of: Self.messageInfix) else { return nil }
        return category(named: String(text[text.index(text.startIndex, offsetBy: Self.messagePrefix.count)..<infix.lowerBound]))
    }

    /// The category of a delivery: its tag when that is one category, else the one its text
    /// names.
    public func category(of delivery: BuiltInPushDelivery) -> Category? {
        if let tags = delivery.tags, let category = category(named: tags.trimmingCharacters(in: .whitespaces)) { return category }
        return delivery.alertText.flatMap(category(ofMessage:))
    }
}
