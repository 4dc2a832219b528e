import Foundation
import NotificationHubs

/// A change the hub is asked to make. The writer applies changes one batch at a time, in the
/// order they arrived, each batch in one durable commit (group commit).
public enum WriteRequest: Sendable {
    /// Create or overwrite; the installation is already validated. `proof` is what the
    /// request carries to name a claimed device as its push channel.
    case putInstallation(hub: String, Installation, proof: ClaimProof = .none)
    case patchInstallation(hub: String, id: String, [InstallationPatchOperation], proof: ClaimProof = .none)
    case deleteInstallation(hub: String, id: String)
    /// Create (`id == nil`, a new id is made) or create-or-update a registration, optionally
    /// only if its ETag matches.
    case putRegistration(hub: String, id: String?, Registration, ifMatch: String?, proof: ClaimProof = .none)
    case deleteRegistration(hub: String, id: String, ifMatch: String?)
    case enqueue(StoredNotification)
    /// Claims an APNs token for the built-in push service: a terminal's, never sent to Apple.
    /// `secret` is what the request carried of the claim's secret (`WriteBatch`). Claiming a
    /// token claimed already changes nothing: only use renews a claim.
    case claimDevice(hub: String, device: String, secret: String? = nil)
    /// A claimed token is in use (a stream opened, an installation holds it): its claim counts
    /// from now (`ClaimKeeper`).
    case renewClaim(hub: String, device: String)
    /// Lets a claim go (its terminal unregistered, an operator removed it, or it expired);
    /// `unlessUsed`: not if an installation or registration uses the token by then (an
    /// expiry, or a claim in the reserve that no installation followed).
    case releaseDevice(hub: String, device: String, unlessUsed: Bool = false)
    /// Fires a scheduled notification that is due: enqueued for dispatch.
    case fireScheduled(hub: String, id: String)
    /// Cancels a scheduled notification that has not fired.
    case cancelScheduled(hub: String, id: String)
    /// A push service said a channel is gone: its installations are marked
    /// `pushChannelExpired` and its legacy registrations removed.
    case channelGone(ChannelGone)
    /// Removes an installation or registration whose expiry has passed (retention); one
    /// renewed since it was found is kept.
    case removeExpired(ExpiredRecord)

    /// Whether it reads of the tables only the records it names and the counts of its hub:
    /// a batch of these alone is resolved without catching up first, as its commit is
    /// checked against what was committed after (`Resolution`). A send reads nothing there
    /// (its quota of scheduled sends is counted in the store where nodes share one); claims,
    /// a channel gone and retention read across records, and catch up first.
    var readsOnlyWhatItNames: Bool {
        switch self {
        case .putInstallation, .patchInstallation, .deleteInstallation, .putRegistration, .deleteRegistration, .enqueue:
            return true
        case .claimDevice, .renewClaim, .releaseDevice, .fireScheduled, .cancelScheduled, .channelGone, .removeExpired:
            return false
        }
    }
}

/// What a write carries to name a device claimed for the built-in push service as a push
/// channel: the claim's secret (`BuiltInPushDelivery.claimSecretHeader`: its terminal), or an
/// operator's right (Manage), or nothing.
public enum ClaimProof: Sendable, Hashable {
    case none
    case secret(String)
    case manage
}

/// An installation or registration found expired.
public struct ExpiredRecord: Sendable, Hashable {
    public var hub: String
    public var id: String
    public var isInstallation: Bool

    /// Whether an expiry (a W3C date; nil or unreadable: never) has passed at `now`.
    static func hasExpired(_ expiry: String?, at now: Date) -> Bool {
        guard let expiry, expiry != W3CDate.never, let date = W3CDate.parse(expiry) else { return false }
        return date <= now
    }
}

/// A push service's word that a device's channel cannot be used again.
public struct ChannelGone: Sendable, Hashable {
    public var hub: String
    /// The handle as deliveries name it (`TagIndex.device`).
    public var device: String
    public var platform: Platform
    /// The outcome that said so (`ExpiredChannel`, `BadChannel`).
    public var reason: String
}

/// What an accepted write came to.
public enum WriteResult: Sendable {
    case done
    case installation(Installation)
    case registration(StoredRegistration)
    /// A claim held; with the secret issued now, to be answered once (nil: it had one).
    case claimed(secret: String?)
}

/// Why a write was refused; `HubEngine.write` throws it, and the routes answer it with the
/// matching status in one place.
public struct WriteRefusal: Error, Sendable, CustomStringConvertible {
    public enum Reason: Sendable {
        case notFound
        /// `If-Match` names another version.
        case preconditionFailed
        case invalid
        /// An id that differs from a stored one only in case.
        case conflict
        /// The hub holds as many, or as many bytes, as it may.
        case quotaExceeded
    }

    public let reason: Reason
    public let detail: String
    public var description: String { detail }

    /// What a release of a device that is not claimed is told.
    static let notClaimed = "The device is not claimed for the built-in push service"
}

/// A write's outcome inside the writer, built with the shorthands below.
typealias WriteResolution = Result<WriteResult, WriteRefusal>

extension Result {
    /// Whether it is a failure (a write refused).
    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}

extension Result where Success == WriteResult, Failure == WriteRefusal {
    static var done: Self { .success(.done) }
    static func installation(_ installation: Installation) -> Self { .success(.installation(installation)) }
    static func registration(_ stored: StoredRegistration) -> Self { .success(.registration(stored)) }
    static func claimed(secret: String?) -> Self { .success(.claimed(secret: secret)) }
    static func notFound(_ detail: String) -> Self { .failure(WriteRefusal(reason: .notFound, detail: detail)) }
    static func preconditionFailed(_ detail: String) -> Self {
        .failure(WriteRefusal(reason: .preconditionFailed, detail: detail))
    }
    static func invalid(_ detail: String) -> Self { .failure(WriteRefusal(reason: .invalid, detail: detail)) }
    static func conflict(_ detail: String) -> Self { .failure(WriteRefusal(reason: .conflict, detail: detail)) }
    static func quotaExceeded(_ detail: String) -> Self { .failure(WriteRefusal(reason: .quotaExceeded, detail: detail)) }
}
