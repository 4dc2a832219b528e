import Foundation
import NotificationHubs

/// What `GET /{hub}/registrations` and `…/tags/{tag}/registrations` list, read from a hub's
/// tables: a pure view of them.
enum RegistrationFeed {
    /// One page of what `GET /{hub}/registrations` lists: legacy registrations by id, then
    /// installations by id, each as its native registration and one per template by name, as
    /// the service projects them; those carrying `tag` or of `deviceToken` when given. Works
    /// on a snapshot of the hub's tables (copy-on-write: taking it under the lock copies
    /// nothing), so writes never wait for a listing; matching entries are filtered and
    /// sorted, but only the page's entries are built.
    static func page(_ tables: HubTables?, tag: String?, deviceToken: String?, start: Int, limit: Int) -> FeedPage {
        guard let tables else { return FeedPage() }
        let device = deviceToken?.lowercased()
        var page = FeedPage()
        var position = 0
        /// Counts one entry; whether it falls in the page.
        func take() -> Bool {
            defer { position += 1 }
            return position >= start && page.count < limit
        }
        let legacy = tables.registrations.values.filter { stored in
            (tag.map { stored.registration.tags.contains($0) } ?? true)
                && (device.map { stored.registration.deviceToken.lowercased() == $0 } ?? true)
        }
        for stored in legacy.sorted(by: { $0.id < $1.id }) where take() { page.stored.append(stored) }
        let installations = tables.installations.values.filter { installation in
            guard installation.platform == .apns, let handle = installation.pushChannel?.handle else { return false }
            return device.map { handle.lowercased() == $0 } ?? true
        }
        for installation in installations.sorted(by: { $0.installationId < $1.installationId }) {
            let handle = installation.pushChannel?.handle ?? ""
            let tags = installation.effectiveTags
            if tag.map({ tags.contains($0) }) ?? true, take() {
                var native = Registration(kind: .appleNative, deviceToken: handle, tags: tags)
                native.registrationId = TagIndex.projectedRegistrationId(
                    hub: tables.name, owner: installation.installationId, template: "")
                native.etag = "1"
                native.expirationTime = installation.expirationTime
                page.projected.append(native)
            }
            for (name, template) in (installation.templates ?? [:]).sorted(by: { $0.key < $1.key }) {
                let templateTags = tags + (template.tags ?? [name])
                guard tag.map({ templateTags.contains($0) }) ?? true, take() else { continue }
                var projected = Registration(
                    kind: .appleTemplate, deviceToken: handle, tags: templateTags, bodyTemplate: template.body,
                    templateName: name)
                projected.registrationId = TagIndex.projectedRegistrationId(
                    hub: tables.name, owner: installation.installationId, template: name)
                projected.etag = "1"
                projected.expiry = template.expiry
                projected.expirationTime = installation.expirationTime
                page.projected.append(projected)
            }
        }
        page.total = position
        return page
    }
}

/// One page of the registration feed.
public struct FeedPage: Sendable {
    /// Legacy registrations on the page, then installations projected as registrations.
    public var stored: [StoredRegistration] = []
    public var projected: [Registration] = []
    /// Entries matching in all, on every page.
    public var total = 0

    public var count: Int { stored.count + projected.count }
}
