import Foundation
import HTTPTypes
import Hummingbird
import NotificationHubs

extension HubResponder {
    static let atomEntryType = "application/atom+xml;type=entry;charset=utf-8"
    static let atomFeedType = "application/atom+xml;type=feed;charset=utf-8"

    /// `/{hub}/registrationids` (POST), `/{hub}/registrations` (POST; GET), its `{id}` (PUT,
    /// GET, DELETE) and `/{hub}/tags/{tag}/registrations` (GET).
    func addRegistrationRoutes(to hub: RouterGroup<HubRequestContext>) {
        hub.group("registrationids").add(middleware: Requires(.listen, of: self))
            .post { request, context in self.newRegistrationId(HubRequest(request, context), hub: context.hub) }
        hub.group("registrations").add(middleware: Requires(.listen, of: self))
            .post { request, context in try await self.createRegistration(HubRequest(request, context), hub: context.hub) }
        // Listing needs Manage, or Listen for one's own handle.
        hub.group("registrations").add(
            middleware: Requires(of: self) { r in try Self.deviceTokenFilter(r) == nil ? .manage : .listen }
        ).get { request, context in
            let r = HubRequest(request, context)
            return try await self.registrationFeed(r, hub: context.hub, tag: nil, deviceToken: try Self.deviceTokenFilter(r))
        }
        let registration = hub.group("registrations/:id").add(middleware: Requires(.listen, of: self))
        registration.put { request, context in try await self.putRegistration(HubRequest(request, context), context) }
        registration.get { request, context in try await self.getRegistration(HubRequest(request, context), context) }
        registration.delete { request, context in try await self.deleteRegistration(HubRequest(request, context), context) }
        hub.group("tags/:tag/registrations").add(middleware: Requires(.manage, of: self)).get { request, context in
            try await self.registrationFeed(
                HubRequest(request, context), hub: context.hub, tag: try context.parameter("tag"), deviceToken: nil)
        }
    }

    /// `POST /{hub}/registrationids`: a new registration id, in `Location`.
    func newRegistrationId(_ r: HubRequest, hub: String) -> Response {
        var headers = HTTPFields()
        headers[.location] =
            "\(baseURL(r))/\(hub)/registrationids/\(HubEngine.makeRegistrationId())?api-version=\(r.apiVersion ?? "2015-01")"
        return HubReply.empty(.created, trackingId: r.trackingId, headers: headers)
    }

    /// `POST /{hub}/registrations`: creates one under a new id.
    func createRegistration(_ r: HubRequest, hub: String) async throws -> Response {
        try await store(try await readRegistration(r), hub: hub, id: nil, ifMatch: nil, r: r)
    }

    /// Creates or updates the registration, if its `If-Match` agrees.
    func putRegistration(_ r: HubRequest, _ context: HubRequestContext) async throws -> Response {
        let id = try context.parameter("id")
        do {
            try HubId.check(id, what: "the registration id")
        } catch {
            throw HubRefusal.badRequest(error.description)
        }
        let registration = try await readRegistration(r)
        return try await store(registration, hub: context.hub, id: id, ifMatch: r.header("If-Match"), r: r)
    }

    func getRegistration(_ r: HubRequest, _ context: HubRequestContext) async throws -> Response {
        guard let stored = try await engine.registration(hub: context.hub, id: try context.parameter("id")) else {
            throw HubRefusal(.notFound, "Registration not found")
        }
        return entryResponse(stored, hub: context.hub, status: .ok, r: r)
    }

    func deleteRegistration(_ r: HubRequest, _ context: HubRequestContext) async throws -> Response {
        _ = try await engine.write(
            .deleteRegistration(hub: context.hub, id: try context.parameter("id"), ifMatch: r.header("If-Match")))
        return HubReply.empty(.ok, trackingId: r.trackingId)
    }

    private func store(_ registration: Registration, hub: String, id: String?, ifMatch: String?, r: HubRequest) async throws
        -> Response
    {
        try spend(
            r, bytes: registration.storedSize, newDevice: id.map { !engine.holdsRegistration(hub: hub, id: $0) } ?? true)
        guard
            case .registration(let stored) = try await engine.write(
                .putRegistration(hub: hub, id: id, registration, ifMatch: ifMatch, proof: claimProof(r)))
        else { throw HubRefusal(.internalServerError, "The registration was not stored") }
        return entryResponse(stored, hub: hub, status: .ok, r: r)
    }

    /// Reads and checks an Atom entry (`Registration.validatedForStorage`).
    private func readRegistration(_ r: HubRequest) async throws -> Registration {
        let bytes = try await body(r)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw HubRefusal.badRequest("The registration is not UTF-8 text")
        }
        do {
            return try Registration(atom: text).validatedForStorage()
        } catch {
            throw HubRefusal.badRequest("The registration is invalid: \(error)")
        }
    }

    func entryResponse(_ stored: StoredRegistration, hub: String, status: HTTPResponse.Status, r: HubRequest) -> Response {
        let selfURL = "\(baseURL(r))/\(hub)/registrations/\(stored.id)?api-version=\(r.apiVersion ?? "2015-01")"
        let entry =
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
            + stored.registration.responseEntryXML(
                selfURL: selfURL, published: W3CDate.format(stored.created), updated: W3CDate.format(stored.updated))
        var headers = HTTPFields()
        headers[.eTag] = "W/\"\(stored.registration.etag ?? "1")\""
        headers[HTTPField.Name("Content-Location")!] = selfURL
        return HubReply.body(status, entry, contentType: Self.atomEntryType, trackingId: r.trackingId, headers: headers)
    }

    /// A feed of legacy registrations plus installations projected as registrations, paged
    /// by `$top` and `continuationtoken`.
    func registrationFeed(_ r: HubRequest, hub: String, tag: String?, deviceToken: String?) async throws -> Response {
        let start = try pagingNumber(r, "continuationtoken") ?? 0
        let top = max(1, min(try pagingNumber(r, "$top") ?? 100, 100))
        let page = try await engine.registrationFeed(hub: hub, tag: tag, deviceToken: deviceToken, start: start, limit: top)
        let now = W3CDate.format(Date())
        let base = "\(baseURL(r))/\(hub)/registrations"
        let version = r.apiVersion ?? "2015-01"
        var entries = page.stored.map { s in
            s.registration.responseEntryXML(
                selfURL: "\(base)/\(s.id)?api-version=\(version)", published: W3CDate.format(s.created),
                updated: W3CDate.format(s.updated))
        }
        entries += page.projected.map { registration in
            registration.responseEntryXML(
                selfURL: "\(base)/\(registration.registrationId ?? "")?api-version=\(version)", published: now, updated: now)
        }
        var headers = HTTPFields()
        if start + page.count < page.total {
            headers[HTTPField.Name("x-ms-continuationtoken")!] = String(start + page.count)
        }
        let feed = Registration.feedXML(selfURL: base, updated: now, entries: entries)
        return HubReply.body(.ok, feed, contentType: Self.atomFeedType, trackingId: r.trackingId, headers: headers)
    }

    /// The handle of `$filter=ChannelUri eq '…'` (or DeviceToken, GcmRegistrationId…).
    static func deviceTokenFilter(_ r: HubRequest) throws -> String? {
        guard let filter = r.query["$filter"], !filter.isEmpty else { return nil }
        let parts = filter.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count >= 3, parts[1].lowercased() == "eq",
            ["channeluri", "devicetoken", "gcmregistrationid", "fcmv1registrationid"].contains(parts[0].lowercased())
        else {
            throw HubRefusal.badRequest("The $filter '\(filter)' is not supported; use ChannelUri eq '<handle>'")
        }
        return parts[2...].joined(separator: " ").trimmingCharacters(in: CharacterSet(charactersIn: "'\""))
    }
}
