import Foundation
import NotificationHubs

/// A change to installations, registrations or the notification queue.
public enum HubMutation: Sendable {
    case upsertInstallation(hub: String, Installation)
    case deleteInstallation(hub: String, id: String)
    case upsertRegistration(StoredRegistration)
    case deleteRegistration(hub: String, id: String)
    case insertNotification(StoredNotification)
    /// An APNs token of the built-in push service (`HubSnapshot.claimedDevices`), claimed or
    /// renewed: its claim counts from `at`. `secretDigest` is its secret's digest when it has
    /// none yet (a new claim, or a claim of before secrets given its first): a digest a claim
    /// holds is never replaced, so of two claims made at once the first written keeps it.
    case claimDevice(hub: String, device: String, at: Date, secretDigest: String? = nil)
    /// A claim given up: by its terminal, by an operator, or because nothing used it.
    case releaseDevice(hub: String, device: String)
    /// A device nothing holds any more (its claim let go, no installation or registration
    /// uses it): its deliveries and the gap retention kept for it are removed, so nothing of
    /// the terminal is left.
    case forgetDevice(hub: String, device: String)
    /// A scheduled notification is due: enqueued for dispatch.
    case fireScheduled(hub: String, id: String)
    /// A scheduled notification will not be sent.
    case cancelScheduled(hub: String, id: String, at: Date)
    /// A start of the hub begins the dispatch of a notification left unfinished: its count of
    /// starts (`StoredNotification.dispatchStarts`) grows by one.
    case beginDispatch(hub: String, id: String)
}

extension HubMutation {
    /// Whether a shared store's change log may name it (what other nodes keep in memory).
    var logsChange: Bool {
        switch self {
        case .upsertInstallation, .deleteInstallation, .upsertRegistration, .deleteRegistration, .claimDevice,
            .releaseDevice:
            return true
        case .insertNotification, .forgetDevice, .fireScheduled, .cancelScheduled, .beginDispatch:
            return false
        }
    }
}
