import Foundation
import Logging
import NotificationHubs
import Synchronization

/// Claims of the built-in push service: a terminal claims its token before it registers,
/// and keeps it while it is used. A claim that no installation or registration uses and on
/// which no stream opened for `lifetime` is let go, so that tokens nobody uses cannot fill
/// the table for good. Renewals are writes, made at most once an hour per device.
///
/// The last quarter of the table is a reserve, as the last quarter of the streams is: a claim
/// made while the table is three quarters full is let go after `reserveWindow` unless an
/// installation or registration uses its token by then, so a client that claims tokens it
/// never registers holds the reserve only as long as its rate refills it.
final class ClaimKeeper: Sendable {
    let lifetime: Duration
    /// How soon an installation must follow a claim made into the reserve.
    let reserveWindow: Duration
    /// Claims made into the reserve on this node, and when each is looked at.
    private let reserved = Mutex<[String: (hub: String, device: String, due: ContinuousClock.Instant)]>([:])
    /// When each claim was last written, this start.
    private let renewals = Mutex<[String: ContinuousClock.Instant]>([:])
    /// The least time between two writes of one claim.
    static let renewalInterval: Duration = .seconds(3600)

    init(lifetime: Duration, reserveWindow: Duration = .seconds(60)) {
        self.lifetime = lifetime
        self.reserveWindow = reserveWindow
    }

    /// The claims of a table of `maximum` kept for tokens an installation follows soon.
    static func reserve(of maximum: Int) -> Int { maximum / 4 }

    /// Notes a claim made into the reserve: looked at once `reserveWindow` has passed.
    func holdInReserve(hub: String, device: String, now: ContinuousClock.Instant = .now) {
        reserved.withLock { $0[Self.key(hub, device)] = (hub, device, now + reserveWindow) }
    }

    /// Claims in the reserve not looked at yet.
    var reservedCount: Int { reserved.withLock { $0.count } }

    /// Lets go of each claim made into the reserve whose window has passed and whose token
    /// no installation or registration uses; returns how many were let go. (A claim the
    /// writer did not commit is simply no longer claimed.)
    func releaseReserve(state: HubState, writes: WriteQueue, logger: Logger, now: ContinuousClock.Instant = .now) async -> Int {
        let due = reserved.withLock { reserved in
            let due = reserved.filter { $0.value.due <= now }
            for key in due.keys { reserved[key] = nil }
            return due.values.sorted { ($0.hub, $0.device) < ($1.hub, $1.device) }
        }
        var released = 0
        for claim in due where state.standing(hub: claim.hub, device: claim.device) == .claimed {
            guard !state.isUsed(hub: claim.hub, device: claim.device) else { continue }
            if (try? await writes.submit(.releaseDevice(hub: claim.hub, device: claim.device, unlessUsed: true))) != nil {
                released += 1
            }
        }
        if released > 0 {
            logger.info(
                "let go of \(released) claims made into the reserve that no installation followed within \(Self.describe(reserveWindow))"
            )
        }
        return released
    }

    /// Whether the claim of `device` is due to be written again (last written an hour or
    /// more ago, or not since this start); notes that it is being written now.
    func renewalDue(hub: String, device: String, now: ContinuousClock.Instant = .now) -> Bool {
        renewals.withLock { renewals in
            let key = Self.key(hub, device)
            if let last = renewals[key], now - last < Self.renewalInterval { return false }
            // Bounded: forgetting only makes the next renewal a write.
            if renewals.count >= 100_000 { renewals.removeAll(keepingCapacity: true) }
            renewals[key] = now
            return true
        }
    }

    /// Makes the next renewal of `device` a write.
    func forget(hub: String, device: String) {
        _ = renewals.withLock { $0.removeValue(forKey: Self.key(hub, device)) }
    }

    private static func key(_ hub: String, _ device: String) -> String { hub.lowercased() + "\u{0}" + device.lowercased() }

    /// `7 days`, `1 day`, `2 hours`: a lifetime as people say it.
    static func describe(_ duration: Duration) -> String {
        let seconds = duration.timeInterval
        if seconds >= 86_400 {
            let days = Int((seconds / 86_400).rounded())
            return days == 1 ? "1 day" : "\(days) days"
        }
        if seconds >= 3600 {
            let hours = Int((seconds / 3600).rounded())
            return hours == 1 ? "1 hour" : "\(hours) hours"
        }
        let minutes = max(1, Int((seconds / 60).rounded()))
        return minutes == 1 ? "1 minute" : "\(minutes) minutes"
    }

    /// Lets go of the claims not renewed for `lifetime` that no installation or registration
    /// uses and that have no stream open; renews those in use. Returns how many were let go.
    func expire(
        store: any HubStore, state: HubState, streams: DeviceStreams, writes: WriteQueue, logger: Logger, now: Date = Date()
    ) async -> Int {
        var released = 0
        // Each page is renewed or let go, so the next page is new; a store that keeps failing
        // ends the sweep (the next one tries again).
        for _ in 0..<1000 {
            guard let stale = try? await store.staleClaims(before: now - lifetime.timeInterval, limit: 1000) else { break }
            var progress = false
            for (hub, device) in stale {
                if state.isUsed(hub: hub, device: device) || streams.openCount(hub: hub, device: device) > 0 {
                    // In use: renewed now, so no sweep finds it again before its time.
                    forget(hub: hub, device: device)
                    if (try? await writes.submit(.renewClaim(hub: hub, device: device))) != nil { progress = true }
                } else if (try? await writes.submit(.releaseDevice(hub: hub, device: device, unlessUsed: true))) != nil {
                    released += 1
                    progress = true
                }
            }
            if stale.count < 1000 || !progress { break }
        }
        if released > 0 {
            logger.info("let go of \(released) claims of the built-in push service unused for \(Self.describe(lifetime))")
        }
        return released
    }

    /// Sweeps now and then (`lifetime` / 24, at most hourly) until cancelled.
    func run(
        store: any HubStore, state: HubState, streams: DeviceStreams, writes: WriteQueue, logger: Logger
    ) async {
        let period = min(.seconds(3600), max(.seconds(1), lifetime / 24))
        while !Task.isCancelled {
            _ = await expire(store: store, state: state, streams: streams, writes: writes, logger: logger)
            try? await Task.sleep(for: period)
        }
    }

    /// Looks at the reserve's claims as their windows pass, until cancelled.
    func runReserve(state: HubState, writes: WriteQueue, logger: Logger) async {
        let period = min(.seconds(5), max(.milliseconds(100), reserveWindow / 4))
        while !Task.isCancelled {
            _ = await releaseReserve(state: state, writes: writes, logger: logger)
            try? await Task.sleep(for: period)
        }
    }
}
