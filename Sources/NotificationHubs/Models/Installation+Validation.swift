extension Installation {
    /// Most templates on one installation. The service documents none; one send renders every
    /// matching template of a device, so this bounds what one send can cost per device.
    public static let maximumTemplates = 32

    /// The installation as the hub keeps it, or the reason it is refused: ids, push channel,
    /// tags and templates checked; every string free of characters that cannot be stored;
    /// tags canonical; each template's name added to its tags; read-only fields reset; the
    /// expiration normalised (`never` when absent).
    public func validatedForStorage(lastUpdate: String) throws(InstallationError) -> Installation {
        var result = self
        try HubId.check(installationId, what: "the installationId")
        if let userId { try HubId.check(userId, what: "the userId") }
        guard let pushChannel else { throw InstallationError("the installation has no pushChannel") }
        switch pushChannel {
        case .handle(let handle) where platform == .apns:
            guard DeviceToken.isValid(handle) else {
                throw InstallationError("the apns pushChannel '\(handle.prefix(80))' is not a device token in hexadecimal")
            }
        case .handle(let handle):
            guard !handle.isEmpty else { throw InstallationError("the pushChannel is empty") }
            try StoredText.check(handle, field: "the pushChannel")
        case .browser(let endpoint, let p256dh, let auth):
            try WebPushSubscription.check(endpoint: endpoint, p256dh: p256dh, auth: auth)
        }
        let checkedTags: [String]
        do throws(TagError) {
            checkedTags = try Tag.validateList(tags ?? [])
        } catch {
            throw InstallationError(error.description)
        }
        try Tag.refuseSystemTags(checkedTags)
        result.tags = checkedTags.isEmpty ? nil : checkedTags
        if let templates {
            guard templates.count <= Self.maximumTemplates else {
                throw InstallationError(
                    "the installation has \(templates.count) templates; at most \(Self.maximumTemplates) are allowed")
            }
            var checked: [String: InstallationTemplate] = [:]
            for (name, template) in templates {
                checked[name] = try template.validated(name: name, platform: platform)
            }
            result.templates = checked.isEmpty ? nil : checked
        }
        if let pushVariables {
            for (key, value) in pushVariables {
                guard !key.isEmpty, key.utf8.allSatisfy({ Tag.isTagByte($0) && $0 != UInt8(ascii: ":") }) else {
                    throw InstallationError("the push variable name '\(key.prefix(60))' is invalid")
                }
                try StoredText.check(value, field: "the push variable \(key)")
            }
        }
        if let expirationTime {
            guard let normalized = W3CDate.normalize(expirationTime) else {
                throw InstallationError(
                    "expirationTime '\(expirationTime.prefix(40))' is not a W3C date such as 2030-01-31T10:20:00Z")
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
    /// Longest template name (wire spec §10).
    public static let maximumNameLength = 200

    /// Checks one template; its name is added to its tags as the service does.
    public func validated(name: String, platform: Platform) throws(InstallationError) -> InstallationTemplate {
        guard !name.isEmpty, name.count <= Self.maximumNameLength else {
            throw InstallationError("a template name must have 1 to \(Self.maximumNameLength) characters")
        }
        try StoredText.check(name, field: "the template name")
        guard !name.contains(":"), name != "$Default" else {
            throw InstallationError("the template name '\(name)' is reserved or contains ':'")
        }
        guard let body, !body.isEmpty else { throw InstallationError("the template '\(name)' has no body") }
        try StoredText.check(body, field: "the body of template '\(name)'", body: true)
        if platform.usesJSONTemplates {
            do {
                _ = try Template.compiled(body: body)
            } catch {
                throw InstallationError("the template '\(name)' is invalid: \(error)")
            }
        }
        if let expiry {
            try StoredText.check(expiry, field: "the expiry of template '\(name)'")
            if TemplateExpression.looksLikeExpression(expiry) {
                do { _ = try TemplateExpression(parsing: expiry) } catch {
                    throw InstallationError("the expiry of template '\(name)' is invalid: \(error)")
                }
            }
        }
        for (header, value) in headers ?? [:] {
            guard !header.isEmpty, header.utf8.allSatisfy(Self.isHeaderNameByte) else {
                throw InstallationError("the header name '\(header.prefix(60))' of template '\(name)' is invalid")
            }
            try StoredText.check(value, field: "the header \(header) of template '\(name)'")
        }
        var result = self
        // The name is a tag of the template even when it could not be one (the service's own
        // recordings show "Template Name"); the other tags follow the tag rules.
        let given = self.tags ?? []
        let others: [String]
        var before = 0
        do throws(TagError) {
            others = try Tag.validateList(given.filter { $0 != name })
            // Where the name was given, it stays; otherwise it comes first.
            if let position = given.firstIndex(of: name) {
                before = try Tag.validateList(given[..<position].filter { $0 != name }).count
            }
        } catch {
            throw InstallationError("template '\(name)': \(error.description)")
        }
        try Tag.refuseSystemTags(others)
        result.tags = Array(others[..<before]) + [name] + others[before...]
        return result
    }

    /// An HTTP field-name byte (RFC 9110 `tchar`).
    static func isHeaderNameByte(_ byte: UInt8) -> Bool {
        Tag.isTagByte(byte) && byte != UInt8(ascii: ":") && byte != UInt8(ascii: "@")
            || "!$%&'*+^`|~".utf8.contains(byte)
    }
}

extension Registration {
    /// The registration as the hub keeps it, or the reason it is refused: device token, tags,
    /// template, and every other field free of characters that cannot be stored.
    public func validatedForStorage() throws(InstallationError) -> Registration {
        var result = self
        if let registrationId { try HubId.check(registrationId, what: "the registration id") }
        guard DeviceToken.isValid(deviceToken) else {
            throw InstallationError("the DeviceToken '\(deviceToken.prefix(80))' is not a device token in hexadecimal")
        }
        do throws(TagError) {
            result.tags = try Tag.validateList(tags)
        } catch {
            throw InstallationError(error.description)
        }
        try Tag.refuseSystemTags(result.tags)
        // Named as on the wire first; then the template rules shared with installations.
        if let templateName { try StoredText.check(templateName, field: "the TemplateName") }
        if let expiry { try StoredText.check(expiry, field: "the Expiry") }
        if kind == .appleTemplate {
            let name = templateName ?? ""
            _ = try InstallationTemplate(body: bodyTemplate, expiry: expiry).validated(
                name: name.isEmpty ? "template" : name, platform: .apns)
        }
        if let priority {
            guard let value = Int(priority), (0...10).contains(value) else {
                throw InstallationError("the Priority '\(priority.prefix(20))' is not an APNs priority from 0 to 10")
            }
        }
        for (name, value) in apnsHeaders {
            guard !name.isEmpty, name.utf8.allSatisfy(InstallationTemplate.isHeaderNameByte) else {
                throw InstallationError("the ApnsHeader name '\(name.prefix(60))' is invalid")
            }
            try StoredText.check(value, field: "the ApnsHeader \(name)")
        }
        for (key, value) in pushVariables ?? [:] {
            try StoredText.check(key, field: "a PushVariables name")
            try StoredText.check(value, field: "the push variable \(key)")
        }
        if let expirationTime { try StoredText.check(expirationTime, field: "the ExpirationTime") }
        return result
    }
}

extension Installation {
    /// About how many bytes the installation takes as stored: the length of its strings.
    /// What a hub's budget counts (cheaper than writing the JSON out).
    public var storedSize: Int {
        var size = installationId.utf8.count + (userId?.utf8.count ?? 0) + 64
        switch pushChannel {
        case .handle(let handle)?: size += handle.utf8.count
        case .browser(let endpoint, let p256dh, let auth)?: size += endpoint.utf8.count + p256dh.utf8.count + auth.utf8.count
        case nil: break
        }
        size += (tags ?? []).reduce(0) { $0 + $1.utf8.count + 3 }
        size += (pushVariables ?? [:]).reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 6 }
        for (name, template) in templates ?? [:] {
            size += name.utf8.count + (template.body?.utf8.count ?? 0) + (template.expiry?.utf8.count ?? 0) + 32
            size += (template.tags ?? []).reduce(0) { $0 + $1.utf8.count + 3 }
            size += (template.headers ?? [:]).reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 6 }
        }
        size += (secondaryTiles ?? [:]).reduce(0) { $0 + $1.key.utf8.count + $1.value.text.utf8.count }
        return size
    }
}

extension Registration {
    /// About how many bytes the registration takes as stored (see `Installation.storedSize`).
    public var storedSize: Int {
        var size = deviceToken.utf8.count + (registrationId?.utf8.count ?? 0) + 96
        size += tags.reduce(0) { $0 + $1.utf8.count + 1 }
        size += (bodyTemplate?.utf8.count ?? 0) + (templateName?.utf8.count ?? 0) + (expiry?.utf8.count ?? 0)
        size += (priority?.utf8.count ?? 0) + (expirationTime?.utf8.count ?? 0)
        size += apnsHeaders.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 48 }
        size += (pushVariables ?? [:]).reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 6 }
        return size
    }
}
