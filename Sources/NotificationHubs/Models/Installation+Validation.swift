extension Installation {
    /// Longest installation id, user id or template name.
    public static let maximumIdLength = 200

    /// Whether `text` may be an installation or user id: what `$InstallationId:{…}` accepts,
    /// letters, digits and `- _ @ # . : =`.
    public static func isValidId(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maximumIdLength
            && text.utf8.allSatisfy { Tag.isTagByte($0) || $0 == UInt8(ascii: "=") }
    }

    /// The installation as the hub keeps it, or the reason it is refused: ids, push channel,
    /// tags and templates checked; tags canonical; each template's name added to its tags;
    /// read-only fields reset; the expiration normalised (`never` when absent).
    public func validatedForStorage(lastUpdate: String) throws(InstallationError) -> Installation {
        var result = self
        guard Self.isValidId(installationId) else {
            throw InstallationError(
                "the installationId '\(installationId.prefix(60))' is invalid: use 1 to \(Self.maximumIdLength) letters, digits and - _ @ # . : ="
            )
        }
        if let userId {
            guard Self.isValidId(userId) else {
                throw InstallationError("the userId '\(userId.prefix(60))' is invalid: use letters, digits and - _ @ # . : =")
            }
        }
        guard let pushChannel else { throw InstallationError("the installation has no pushChannel") }
        if platform == .apns {
            let handle = pushChannel.handle
            guard DeviceToken.isValid(handle) else {
                throw InstallationError("the apns pushChannel '\(handle.prefix(80))' is not a device token in hexadecimal")
            }
        } else if pushChannel.handle.isEmpty {
            throw InstallationError("the pushChannel is empty")
        }
        let checkedTags: [String]
        do throws(TagError) {
            checkedTags = try Tag.validateList(tags ?? [])
        } catch {
            throw InstallationError(error.description)
        }
        if let system = checkedTags.first(where: { $0.hasPrefix("$") }) {
            throw InstallationError("the tag '\(system)' is a system tag; the hub adds $InstallationId and $UserId itself")
        }
        result.tags = checkedTags.isEmpty ? nil : checkedTags
        if let templates {
            var checked: [String: InstallationTemplate] = [:]
            for (name, template) in templates {
                checked[name] = try template.validated(name: name, platform: platform)
            }
            result.templates = checked.isEmpty ? nil : checked
        }
        if let pushVariables {
            for key in pushVariables.keys
            where key.isEmpty || !key.utf8.allSatisfy({ Tag.isTagByte($0) && $0 != UInt8(ascii: ":") }) {
                throw InstallationError("the push variable name '\(key)' is invalid")
            }
        }
        if let expirationTime {
            guard let normalized = W3CDate.normalize(expirationTime) else {
                throw InstallationError("expirationTime '\(expirationTime)' is not a W3C date such as 2030-01-31T10:20:00Z")
            }
            result.expirationTime = normalized
        } else {
            result.expirationTime = W3CDate.never
        }
        result.pushChannelExpired = false
        result.lastActiveOn = nil
        result.lastUpdate = lastUpdate
        return result
    }

    /// Every tag a send can match this installation on: its tags, `$InstallationId:{id}`
    /// and, with a user, `$UserId:{user}`.
    public var effectiveTags: [String] {
        var all = tags ?? []
        all.append(Tag.installationId(installationId))
        if let userId { all.append(Tag.userId(userId)) }
        return all
    }
}

extension InstallationTemplate {
    /// Checks one template; its name is added to its tags as the service does.
    public func validated(name: String, platform: Platform) throws(InstallationError) -> InstallationTemplate {
        guard !name.isEmpty, name.count <= Installation.maximumIdLength else {
            throw InstallationError("a template name must have 1 to \(Installation.maximumIdLength) characters")
        }
        guard !name.contains(":"), name != "$Default" else {
            throw InstallationError("the template name '\(name)' is reserved or contains ':'")
        }
        guard let body, !body.isEmpty else { throw InstallationError("the template '\(name)' has no body") }
        if platform.usesJSONTemplates {
            do {
                _ = try Template.compiled(body: body)
            } catch {
                throw InstallationError("the template '\(name)' is invalid: \(error)")
            }
        }
        if let expiry, TemplateExpression.looksLikeExpression(expiry) {
            do { _ = try TemplateExpression(parsing: expiry) } catch {
                throw InstallationError("the expiry of template '\(name)' is invalid: \(error)")
            }
        }
        var result = self
        var tags = tags ?? []
        if !tags.contains(name) { tags.insert(name, at: 0) }
        result.tags = tags
        return result
    }
}
