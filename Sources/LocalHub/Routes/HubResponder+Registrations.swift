import Foundation
import HTTPTypes
import Hummingbird
import NotificationHubs

extension HubResponder {
    static let atomEntryType = "application/atom+xml;type=entry;charset=utf-8"
    static let atomFeedType = "application/atom+xml;type=feed;charset=utf-8"

    /// `POST /{hub}/registrations` (create, Listen) and `GET` (list: Manage, or Listen when
    /// filtered by the caller's own handle).
    func registrations(_ r: HubRequest, hub: String) async throws -> Response {
        switch r.method {
        case .post:
            try authorize(r, hub: hub, needs: .listen)
            let registration = try await readRegistration(r)
            return try await store(registration, hub: hub, id: nil, ifMatch: nil, r: r)
        case .get:
            let handle = try deviceTokenFilter(r)
            try authorize(r, hub: hub, needs: handle == nil ? .manage : .listen)
            return try await registrationFeed(r, hub: hub, tag: nil, deviceToken: handle)
        default:
            throw HubRefusal(.methodNotAllowed, "Registrations take POST and GET")
        }
    }

    /// `PUT | GET | DELETE /{hub}/registrations/{id}` (Listen).
    func registration(_ r: HubRequest, hub: String, id: String) async throws -> Response {
        try authorize(r, hub: hub, needs: .listen)
        switch r.method {
        case .put:
            do {
                try HubId.check(id, what: "the registration id")
            } catch {
                throw HubRefusal.badRequest(error.description)
            }
            let registration = try await readRegistration(r)
            return try await store(registration, hub: hub, id: id, ifMatch: r.header("If-Match"), r: r)
        case .get:
            try await engine.catchUp()
            guard let stored = engine.registration(hub: hub, id: id) else {
                throw HubRefusal(.notFound, "Registration not found")
            }
            return entryResponse(stored, hub: hub, status: .ok, r: r)
        case .delete:
            _ = try await engine.write(.deleteRegistration(hub: hub, id: id, ifMatch: r.header("If-Match")))
            return HubReply.empty(.ok, trackingId: r.trackingId)
        default:
            throw HubRefusal(.methodNotAllowed, "A registration takes PUT, GET and DELETE")
        }
    }

    private func store(_ registration: Registration, hub: String, id: String?, ifMatch: String?, r: HubRequest) async throws
        -> Response
    {
        try spend(
            r, bytes: registration.storedSize, newDevice: id.map { engine.registration(hub: hub, id: $0) == nil } ?? true)
        guard
            case .registration(let stored) = try await engine.write(
                .putRegistration(hub: hub, id: id, registration, ifMatch: ifMatch))
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
        try await engine.catchUp()
        let start = try pagingNumber(r, "continuationtoken") ?? 0
        let top = max(1, min(try pagingNumber(r, "$top") ?? 100, 100))
        let page = engine.registrationFeed(hub: hub, tag: tag, deviceToken: deviceToken, start: start, limit: top)
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
    private func deviceTokenFilter(_ r: HubRequest) throws -> String? {
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
