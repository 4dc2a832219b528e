import Foundation
import NotificationHubs

/// The most a stored row may hold: four times the largest request body, which no request
/// could make (a stored row is its body plus what the hub adds).
let largestStoredRow = 256 << 10

extension Installation {
    /// An installation read from its stored row: its JSON, which must carry the row's id and
    /// pass every check a request's installation passes (a row written by hand gets no
    /// more trust than a request).
    static func stored(json: String, id: some Sequence<UInt8>) throws -> Installation {
        guard json.utf8.count <= largestStoredRow else {
            throw QuarantineReason(description: "the row holds \(json.utf8.count) bytes, more than any request could write")
        }
        let installation = try Installation(jsonText: json.utf8)
        guard installation.installationId.utf8.elementsEqual(id) else {
            throw QuarantineReason(description: "the id in the row differs from the one in its JSON")
        }
        _ = try installation.validatedForStorage(lastUpdate: installation.lastUpdate ?? "")
        return installation
    }
}

extension StoredRegistration {
    /// A registration read from its stored row: its Atom XML, which must carry the row's id.
    static func stored(hub: String, id: some Sequence<UInt8>, xml: String, created: Double, updated: Double) throws
        -> StoredRegistration
    {
        guard xml.utf8.count <= largestStoredRow else {
            throw QuarantineReason(description: "the row holds \(xml.utf8.count) bytes, more than any request could write")
        }
        let registration = try Registration(atom: xml)
        guard (registration.registrationId ?? "").utf8.elementsEqual(id) else {
            throw QuarantineReason(description: "the id in the row differs from the one in its XML")
        }
        _ = try registration.validatedForStorage()
        return StoredRegistration(
            hub: hub, registration: registration, created: Date(timeIntervalSince1970: created),
            updated: Date(timeIntervalSince1970: updated))
    }
}
