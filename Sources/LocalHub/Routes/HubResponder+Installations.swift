import Foundation
import HTTPTypes
import Hummingbird
import NotificationHubs

extension HubResponder {
    static let contentLocation = HTTPField.Name("Content-Location")!

    /// `PUT | GET | PATCH | DELETE /{hub}/installations/{id}` (Listen).
    func installation(_ r: HubRequest, hub: String, id: String) async throws -> Response {
        try authorize(r, hub: hub, needs: .listen)
        switch r.method {
        case .put:
            let bytes = try await body(r)
            let parsed: Installation
            do {
                parsed = try Installation(jsonText: bytes)
            } catch {
                throw HubRefusal.badRequest("The installation is invalid: \(error)")
            }
            guard parsed.installationId == id else {
                throw HubRefusal.badRequest(
                    "The installationId '\(parsed.installationId)' in the body does not match '\(id)' in the URL")
            }
            let stored: Installation
            do {
                stored = try parsed.validatedForStorage(lastUpdate: W3CDate.format(Date()))
            } catch {
                throw HubRefusal.badRequest(error.description)
            }
            try spend(r, bytes: bytes.count, newDevice: engine.installation(hub: hub, id: id) == nil)
            _ = try await engine.write(.putInstallation(hub: hub, stored))
            var headers = HTTPFields()
            headers[Self.contentLocation] = "\(baseURL(r))/\(hub)/installations/\(id)"
            return HubReply.empty(.ok, trackingId: r.trackingId, headers: headers)
        case .get:
            try await engine.catchUp()
            guard let installation = engine.installation(hub: hub, id: id) else {
                throw HubRefusal(.notFound, "Installation not found")
            }
            return HubReply.body(
                .ok, installation.json.text, contentType: "application/json; charset=utf-8", trackingId: r.trackingId)
        case .patch:
            let bytes = try await body(r)
            let operations: [InstallationPatchOperation]
            do {
                operations = try InstallationPatchOperation.parseDocument(JSONValue(parsing: bytes))
            } catch let error as JSONParseError {
                throw HubRefusal.badRequest("The patch is not valid JSON: \(error)")
            } catch {
                throw HubRefusal.badRequest("The patch is invalid: \(error)")
            }
            try spend(r, bytes: bytes.count, newDevice: false)
            _ = try await engine.write(.patchInstallation(hub: hub, id: id, operations))
            return HubReply.empty(.ok, trackingId: r.trackingId)
        case .delete:
            _ = try await engine.write(.deleteInstallation(hub: hub, id: id))
            return HubReply.empty(.noContent, trackingId: r.trackingId)
        default:
            throw HubRefusal(.methodNotAllowed, "Installations take PUT, GET, PATCH and DELETE")
        }
    }
}
