import Foundation
import NotificationHubs

/// Claims of the built-in push service: a terminal claims its token before it registers,
/// and keeps it while it is used. A claim that no installation or registration uses and on
/// which no stream opened for `claimLifetime` is let go, so that tokens nobody uses cannot
/// fill the table for good.
extension HubEngine {
    /// How the hub knows a device token.
    public enum DeviceStanding: Sendable, Equatable {
        /// Claimed for the built-in push service.
        case claimed
        /// Not claimed, but the handle of an installation or registration of the hub.
        case registered
        /// Neither: nothing will ever be delivered to it.
        case unknown
    }

    public func deviceStanding(hub: String, device: String) -> DeviceStanding {
        let device = device.lowercased()
        return directory.withLock { directory in
            guard let tables = directory[hub] else { return .unknown }
            if tables.claimedDevices.contains(device) { return .claimed }
            return tables.ownersByDevice[device]?.isEmpty == false ? .registered : .unknown
        }
    }

    /// The devices claimed for the built-in push service.
    public func claimedDevices(hub: String) async throws -> Set<String> {
        try await catchUp()
        return directory.withLock { $0[hub]?.claimedDevices ?? [] }
    }

    /// Renews the claim of a device whose stream opens (a write at most once an hour per
    /// device); nothing for a device that is not claimed.
    public func streamOpened(hub: String, device: String) {
        guard deviceStanding(hub: hub, device: device) == .claimed,
            claimRenewals.withLock({ $0[HubEngine.claimKey(hub, device)] }).map({ Date().timeIntervalSince($0) >= 3600 })
                ?? true
        else { return }
        Task { _ = try? await self.write(.claimDevice(hub: hub, device: device.lowercased())) }
    }

    /// Whether the claim of `device` is due to be written again (last written an hour or more
    /// ago, or not since this start); notes that it is being written now.
    func claimRenewalDue(hub: String, device: String, now: Date) -> Bool {
        claimRenewals.withLock { renewals in
            let key = Self.claimKey(hub, device)
            if let last = renewals[key], now.timeIntervalSince(last) < 3600, now >= last { return false }
            // Bounded: forgetting only makes the next renewal a write.
            if renewals.count >= 100_000 { renewals.removeAll(keepingCapacity: true) }
            renewals[key] = now
            return true
        }
    }

    static func claimKey(_ hub: String, _ device: String) -> String { hub.lowercased() + "\u{0}" + device.lowercased() }

    /// `7 days`, `1 day`, `2 hours`: a lifetime as people say it.
    static func describeDays(_ seconds: TimeInterval) -> String {
        if seconds >= 86_400 {
            let days = Int((seconds / 86_400).rounded())
            return days == 1 ? "1 day" : "\(days) days"
        }
        let hours = max(1, Int((seconds / 3600).rounded()))
        return hours == 1 ? "1 hour" : "\(hours) hours"
    }

    /// Lets go of the claims not renewed for `claimLifetime` that no installation or
    /// registration uses and that have no stream open; returns how many.
    @discardableResult
    public func expireClaims(now: Date = Date()) async -> Int {
        var released = 0
        // Each page is renewed or let go, so the next page is new; a store that keeps failing
        // ends the sweep (the next one tries again).
        for _ in 0..<1000 {
            guard let stale = try? await store.staleClaims(before: now - claimLifetime, limit: 1000) else { break }
            var progress = false
            for (hub, device) in stale {
                let used = directory.withLock { $0[hub]?.ownersByDevice[device]?.isEmpty == false }
                if used || streams.openCount(hub: hub, device: device) > 0 {
                    // In use: renewed now, so no sweep finds it again before its time.
                    _ = claimRenewals.withLock { $0.removeValue(forKey: Self.claimKey(hub, device)) }
                    if (try? await write(.claimDevice(hub: hub, device: device))) != nil { progress = true }
                } else if (try? await write(.releaseDevice(hub: hub, device: device))) != nil {
                    released += 1
                    progress = true
                }
            }
            if stale.count < 1000 || !progress { break }
        }
        if released > 0 {
            logger.info(
                "let go of \(released) claims of the built-in push service unused for \(Self.describeDays(claimLifetime))")
        }
        return released
    }

    /// Sweeps for expired claims now and then (`claimLifetime` / 24, at most hourly) until
    /// cancelled.
    func runClaimExpiry() async {
        let period = min(3600, max(1, claimLifetime / 24))
        while !Task.isCancelled {
            await expireClaims()
            try? await Task.sleep(nanoseconds: UInt64(period * 1_000_000_000))
        }
    }
}
