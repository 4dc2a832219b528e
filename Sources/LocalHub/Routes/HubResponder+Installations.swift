import Foundation
import HTTPTypes
import Hummingbird
import NotificationHubs

/// `/{hub}/installations/{id}` (Listen): PUT, GET, PATCH and DELETE.
extension HubResponder {
    static let contentLocation = HTTPField.Name("Content-Location")!

    func addInstallationRoutes(to hub: RouterGroup<HubRequestContext>) {
        let installation = hub.group("installations/:id").add(middleware: Requires(.listen, of: self))
        installation.put { request, context in try await self.putInstallation(HubRequest(request, context), context) }
        installation.get { request, context in try await self.getInstallation(HubRequest(request, context), context) }
        installation.patch { request, context in try await self.patchInstallation(HubRequest(request, context), context) }
        installation.delete { request, context in try await self.deleteInstallation(HubRequest(request, context), context) }
    }

    /// Creates or overwrites the installation, validated as the service does.
    func putInstallation(_ r: HubRequest, _ context: HubRequestContext) async throws -> Response {
        let (hub, id) = (context.hub, try context.parameter("id"))
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
        try spend(r, bytes: bytes.count, newDevice: !engine.holdsInstallation(hub: hub, id: id))
        _ = try await engine.write(.putInstallation(hub: hub, stored, proof: claimProof(r)))
        var headers = HTTPFields()
        headers[Self.contentLocation] = "\(baseURL(r))/\(hub)/installations/\(id)"
        return HubReply.empty(.ok, trackingId: r.trackingId, headers: headers)
    }

    func getInstallation(_ r: HubRequest, _ context: HubRequestContext) async throws -> Response {
        guard let installation = try await engine.installation(hub: context.hub, id: try context.parameter("id")) else {
            throw HubRefusal(.notFound, "Installation not found")
        }
        return HubReply.body(
            .ok, installation.json.text, contentType: "application/json; charset=utf-8", trackingId: r.trackingId)
    }

    /// Applies a JSON-Patch document (add, remove, replace), validated as a PUT is.
    func patchInstallation(_ r: HubRequest, _ context: HubRequestContext) async throws -> Response {
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
        _ = try await engine.write(
            .patchInstallation(hub: context.hub, id: try context.parameter("id"), operations, proof: claimProof(r)))
        return HubReply.empty(.ok, trackingId: r.trackingId)
    }

    func deleteInstallation(_ r: HubRequest, _ context: HubRequestContext) async throws -> Response {
        _ = try await engine.write(.deleteInstallation(hub: context.hub, id: try context.parameter("id")))
        return HubReply.empty(.noContent, trackingId: r.trackingId)
    }
}
