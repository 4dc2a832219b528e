import Foundation
import NotificationHubs

/// The batch's claims of built-in push devices, and the channels reported gone.
extension WriteBatch {
    /// Claims a token for its terminal. A token not claimed is claimed with a new secret,
    /// unless an installation or registration already uses it (an iPhone's: a terminal claims
    /// before it registers); a token claimed is claimed again only with its claim's secret
    /// (nothing changes: only use renews a claim), or, claimed before claims had secrets, is
    /// given one. The secret is answered once; the hub keeps its digest only.
    mutating func claimDevice(_ hub: String, _ device: String, secret: String?) -> WriteResolution {
        let held = state.directory.withLock {
            $0[hub].map { ($0.claimedDevices.contains(device), $0.claimSecrets[device], $0.claimedDevices.count) }
        }
        guard let (wasClaimed, storedDigest, count) = held else { return .notFound("The hub '\(hub)' is not served") }
        let key = Self.key(hub, device)
        // On a shared store, a claim of the token committed on another node since these tables'
        // position moves this batch: resolved again, it meets that claim (409).
        reads.append(Resolution.Read(kind: .builtInPushDevice, hub: hub, id: device, exact: true))
        if claimed[key] ?? wasClaimed {
            guard let digest = claimDigests[key] ?? storedDigest else { return issueSecret(hub, device, key) }
            guard let secret, BuiltInPushClaim.isSecret(secret), ConstantTime.equal(BuiltInPushClaim.digest(secret), digest)
            else {
                return .conflict(
                    "The device token is claimed by another terminal; a terminal claims it again with the secret its claim "
                        + "answered (\(BuiltInPushDelivery.claimSecretHeader))")
            }
            return .claimed(secret: nil)
        }
        guard !isUsed(hub, device) else {
            return .conflict(
                "The device token is the push channel of an installation or registration that never claimed it (an "
                    + "iPhone's); a terminal claims its token before it registers it")
        }
        guard count + (claimDelta[hub.lowercased()] ?? 0) < limits.maximumPerHub else {
            return .quotaExceeded(
                "the hub's built-in push service holds \(count) devices, the most it may; devices no terminal "
                    + "used for \(ClaimKeeper.describe(claims.lifetime)) are let go (claims no installation followed "
                    + "within \(ClaimKeeper.describe(claims.reserveWindow)), once the table is three quarters full), and "
                    + "an operator can remove some ('breaking-news hub devices remove')")
        }
        claimed[key] = true
        claimDelta[hub.lowercased(), default: 0] += 1
        // The last quarter of the table is the reserve: a claim made into it is kept only if
        // an installation or registration uses it soon (`ClaimKeeper.reserveWindow`).
        if count + (claimDelta[hub.lowercased()] ?? 0) > limits.maximumPerHub - ClaimKeeper.reserve(of: limits.maximumPerHub) {
            claims.holdInReserve(hub: hub, device: device)
        }
        if claims.renewalDue(hub: hub, device: device) { renewalsNoted.append((hub, device)) }
        return issueSecret(hub, device, key)
    }

    /// Gives a claim a new secret: its digest written and published, the secret answered.
    mutating func issueSecret(_ hub: String, _ device: String, _ key: String) -> WriteResolution {
        let secret = BuiltInPushClaim.makeSecret()
        let digest = BuiltInPushClaim.digest(secret)
        claimDigests[key] = digest
        mutations.append(.claimDevice(hub: hub, device: device, at: now, secretDigest: digest))
        published.append(.claim(hub: hub, device: device, claimed: true, digest: digest))
        return .claimed(secret: secret)
    }

    /// Renews a claim in use (at most once an hour per device: each renewal is a write).
    mutating func renewClaim(_ hub: String, _ device: String) -> WriteResolution {
        guard
            state.directory.withLock({ $0[hub]?.claimedDevices.contains(device) }) == true
                || claimed[Self.key(hub, device)] == true
        else { return .done }
        if claims.renewalDue(hub: hub, device: device) {
            renewalsNoted.append((hub, device))
            mutations.append(.claimDevice(hub: hub, device: device, at: now))
        }
        return .done
    }

    mutating func releaseDevice(_ hub: String, _ device: String, unlessUsed: Bool) -> WriteResolution {
        guard let isClaimed = state.directory.withLock({ $0[hub]?.claimedDevices.contains(device) }) else {
            return .notFound("The hub '\(hub)' is not served")
        }
        let key = Self.key(hub, device)
        guard claimed[key] ?? isClaimed else { return .notFound(WriteRefusal.notClaimed) }
        if unlessUsed, isUsed(hub, device) { return .done }
        claimed[key] = false
        claimDigests[key] = nil
        claimDelta[hub.lowercased(), default: 0] -= 1
        mutations.append(.releaseDevice(hub: hub, device: device))
        published.append(.claim(hub: hub, device: device, claimed: false, digest: nil))
        // Nothing holds the device any more: nothing of it is kept either (a terminal that
        // unregisters deletes its installation first, then lets its claim go).
        if !isUsed(hub, device) { mutations.append(.forgetDevice(hub: hub, device: device)) }
        return .done
    }

    /// Whether an installation or registration uses `device`, as of this point of the batch.
    func isUsed(_ hub: String, _ device: String) -> Bool {
        let owners = state.directory.withLock { $0[hub]?.ownersByDevice[device] ?? [] }
        for owner in owners {
            let id = String(owner.dropFirst(2))
            if owner.hasPrefix("i:") {
                if let installation = currentInstallation(hub, id), let handle = installation.pushChannel?.handle,
                    TagIndex.device(handle, platform: installation.platform) == device
                {
                    return true
                }
            } else if let registration = currentRegistration(hub, id),
                registration.registration.deviceToken.lowercased() == device
            {
                return true
            }
        }
        // Written earlier in this batch, not yet in the tables.
        let prefix = hub.lowercased() + "\u{0}"
        for (key, pending) in installations where key.hasPrefix(prefix) {
            if let installation = pending, let handle = installation.pushChannel?.handle,
                TagIndex.device(handle, platform: installation.platform) == device
            {
                return true
            }
        }
        for (key, pending) in registrations where key.hasPrefix(prefix) {
            if let registration = pending, registration.registration.deviceToken.lowercased() == device { return true }
        }
        return false
    }

    /// A push service said a channel is gone: its installations are marked expired and its
    /// legacy registrations removed. A terminal's channel is never marked: a claim made since
    /// the send wins.
    mutating func channelGone(_ gone: ChannelGone) -> WriteResolution {
        let (owners, isClaimed) = state.directory.withLock {
            ($0[gone.hub]?.ownersByDevice[gone.device] ?? [], $0[gone.hub]?.claimedDevices.contains(gone.device) ?? false)
        }
        guard !isClaimed else { return .done }
        for owner in owners.sorted() {
            let id = String(owner.dropFirst(2))
            if owner.hasPrefix("i:") {
                guard var installation = currentInstallation(gone.hub, id), installation.platform == gone.platform,
                    let handle = installation.pushChannel?.handle,
                    TagIndex.device(handle, platform: gone.platform) == gone.device, installation.pushChannelExpired != true
                else { continue }
                installation.pushChannelExpired = true
                reads.append(Resolution.Read(kind: .installation, hub: gone.hub, id: id, exact: true))
                setInstallation(gone.hub, id, installation)
            } else if gone.platform == .apns, let existing = currentRegistration(gone.hub, id),
                existing.registration.deviceToken.lowercased() == gone.device
            {
                reads.append(Resolution.Read(kind: .registration, hub: gone.hub, id: id, exact: true))
                removeRegistration(gone.hub, id, existing)
            }
        }
        return .done
    }
}
