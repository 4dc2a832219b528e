import Foundation
import NotificationHubs

/// The batch's registration writes: PUT and DELETE, each checked against its ETag.
extension WriteBatch {
    mutating func putRegistration(
        _ hub: String, _ requestedId: String?, _ given: Registration, ifMatch: String?, proof: ClaimProof
    ) -> WriteResolution {
        guard mayName(hub, given.deviceToken, platform: .apns, proof) else { return Self.claimedChannel }
        let id = requestedId ?? HubEngine.makeRegistrationId()
        reads.append(Resolution.Read(kind: .registration, hub: hub, id: id, exact: true))
        let existing = currentRegistration(hub, id)
        if let refused = Self.checkETag(ifMatch, of: existing) { return refused }
        if existing == nil {
            let held = holding(installations: false, hub, id)
            if let other = held.folded { return Self.caseConflict("registration", existing: other, id: id) }
            guard held.count < limits.maximumPerHub else {
                return .quotaExceeded("the hub holds \(held.count) registrations, the most it may; delete some first")
            }
            room = min(room, Int64(limits.maximumPerHub - held.count - 1))
        }
        guard fits(hub, given.storedSize - (existing?.registration.storedSize ?? 0)) else { return overBudget }
        if existing == nil {
            foldedRegistrations[Self.key(hub, id.lowercased())] = .some(id)
            registrationDelta[hub.lowercased(), default: 0] += 1
        }
        var registration = given
        registration.registrationId = id
        registration.etag = String((Int(existing?.registration.etag ?? "0") ?? 0) + 1)
        registration.expirationTime = expiry(registration.expirationTime.flatMap(W3CDate.normalize)) ?? W3CDate.never
        let stored = StoredRegistration(hub: hub, registration: registration, created: existing?.created ?? now, updated: now)
        registrations[Self.key(hub, id)] = .some(stored)
        mutations.append(.upsertRegistration(stored))
        published.append(.registration(hub: hub, id: id))
        return .registration(stored)
    }

    mutating func deleteRegistration(_ hub: String, _ id: String, ifMatch: String?) -> WriteResolution {
        reads.append(Resolution.Read(kind: .registration, hub: hub, id: id, exact: true))
        guard let existing = currentRegistration(hub, id) else { return .notFound("Registration not found") }
        if let refused = Self.checkETag(ifMatch, of: existing) { return refused }
        removeRegistration(hub, id, existing)
        return .done
    }

    mutating func removeRegistration(_ hub: String, _ id: String, _ existing: StoredRegistration) {
        _ = fits(hub, -existing.registration.storedSize)
        registrations[Self.key(hub, id)] = .some(nil)
        foldedRegistrations[Self.key(hub, id.lowercased())] = .some(nil)
        registrationDelta[hub.lowercased(), default: 0] -= 1
        mutations.append(.deleteRegistration(hub: hub, id: id))
        published.append(.registration(hub: hub, id: id))
    }
}
