import Foundation
import NotificationHubs

/// The batch's installation writes: PUT, PATCH, DELETE and expiry.
extension WriteBatch {
    mutating func putInstallation(_ hub: String, _ given: Installation, _ proof: ClaimProof) -> WriteResolution {
        guard mayName(hub, given.pushChannel?.handle, platform: given.platform, proof) else { return Self.claimedChannel }
        var installation = given
        installation.expirationTime = expiry(given.expirationTime)
        let id = installation.installationId
        reads.append(Resolution.Read(kind: .installation, hub: hub, id: id, exact: false))
        let current = currentInstallation(hub, id)
        if current == nil {
            let held = holding(installations: true, hub, id)
            if let existing = held.folded { return Self.caseConflict("installation", existing: existing, id: id) }
            guard held.count < limits.maximumPerHub else {
                return .quotaExceeded("the hub holds \(held.count) installations, the most it may; delete some first")
            }
            room = min(room, Int64(limits.maximumPerHub - held.count - 1))
        }
        guard fits(hub, installation.storedSize - (current?.storedSize ?? 0)) else { return overBudget }
        if current == nil {
            foldedInstallations[Self.key(hub, id.lowercased())] = .some(id)
            installationDelta[hub.lowercased(), default: 0] += 1
        }
        setInstallation(hub, id, installation)
        return .installation(installation)
    }

    mutating func patchInstallation(
        _ hub: String, _ id: String, _ operations: [InstallationPatchOperation], _ proof: ClaimProof
    ) -> WriteResolution {
        reads.append(Resolution.Read(kind: .installation, hub: hub, id: id, exact: true))
        guard let current = currentInstallation(hub, id) else { return .notFound("Installation not found") }
        var installation = current
        do {
            try installation.apply(operations)
            installation = try installation.validatedForStorage(lastUpdate: W3CDate.format(now))
        } catch {
            return .invalid(error.description)
        }
        guard mayName(hub, installation.pushChannel?.handle, platform: installation.platform, proof) else {
            return Self.claimedChannel
        }
        guard fits(hub, installation.storedSize - current.storedSize) else { return overBudget }
        setInstallation(hub, id, installation)
        return .installation(installation)
    }

    /// Whether a write may name `handle` (of `platform`) as a push channel. A device token
    /// claimed with a secret is named only with that secret (its terminal) or by an operator
    /// (Manage): another's installation on it would keep what was delivered to the token after
    /// its terminal let it go, and put news of its own in the terminal's log. The claim is
    /// read (a commit checks it against a claim made since on another node).
    mutating func mayName(_ hub: String, _ handle: String?, platform: Platform, _ proof: ClaimProof) -> Bool {
        guard let handle, platform == .apns, DeviceToken.isValid(handle) else { return true }
        let device = TagIndex.device(handle, platform: platform)
        let key = Self.key(hub, device)
        reads.append(Resolution.Read(kind: .builtInPushDevice, hub: hub, id: device, exact: true))
        if claimed[key] == false { return true }
        guard let digest = claimDigests[key] ?? state.directory.withLock({ $0[hub]?.claimSecrets[device] }) else {
            return true
        }
        switch proof {
        case .manage: return true
        case .secret(let secret):
            return BuiltInPushClaim.isSecret(secret) && ConstantTime.equal(BuiltInPushClaim.digest(secret), digest)
        case .none: return false
        }
    }

    static let claimedChannel = WriteResolution.conflict(
        "The push channel is a device token a terminal claimed for the built-in push service: only its terminal names it, "
            + "with its claim's secret (\(BuiltInPushDelivery.claimSecretHeader))")

    mutating func deleteInstallation(_ hub: String, _ id: String) -> WriteResolution {
        reads.append(Resolution.Read(kind: .installation, hub: hub, id: id, exact: true))
        guard let current = currentInstallation(hub, id) else {
            answeredUnwritten = true
            return .done
        }
        _ = fits(hub, -current.storedSize)
        installations[Self.key(hub, id)] = .some(nil)
        foldedInstallations[Self.key(hub, id.lowercased())] = .some(nil)
        installationDelta[hub.lowercased(), default: 0] -= 1
        mutations.append(.deleteInstallation(hub: hub, id: id))
        published.append(.installation(hub: hub, id: id))
        return .done
    }

    /// The expiry a written installation or registration gets: the one it names, else the
    /// hub's time-to-live from now (`--installation-ttl`), else never.
    func expiry(_ given: String?) -> String? {
        guard let ttl = limits.installationTTL, given == nil || given == W3CDate.never else { return given }
        return W3CDate.format(now.addingTimeInterval(ttl))
    }

    /// Retention's removal of what expired, unless it was renewed since it was found.
    mutating func removeExpired(_ record: ExpiredRecord) -> WriteResolution {
        if record.isInstallation {
            reads.append(Resolution.Read(kind: .installation, hub: record.hub, id: record.id, exact: true))
            guard let current = currentInstallation(record.hub, record.id),
                ExpiredRecord.hasExpired(current.expirationTime, at: now)
            else { return .done }
            return deleteInstallation(record.hub, record.id)
        }
        reads.append(Resolution.Read(kind: .registration, hub: record.hub, id: record.id, exact: true))
        guard let current = currentRegistration(record.hub, record.id),
            ExpiredRecord.hasExpired(current.registration.expirationTime, at: now)
        else { return .done }
        removeRegistration(record.hub, record.id, current)
        return .done
    }

    mutating func setInstallation(_ hub: String, _ id: String, _ installation: Installation) {
        installations[Self.key(hub, id)] = .some(installation)
        mutations.append(.upsertInstallation(hub: hub, installation))
        published.append(.installation(hub: hub, id: id))
    }
}
