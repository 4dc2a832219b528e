import Foundation
import NotificationHubs

/// Everything the hub loads at start.
public struct HubSnapshot: Sendable {
    public var installations: [(hub: String, installation: Installation)] = []
    public var registrations: [StoredRegistration] = []
    /// The APNs tokens terminals claimed for the built-in push service, by hub, each with the
    /// digest of its claim's secret (`BuiltInPushClaim.digest`; nil for a claim made before claims
    /// had secrets).
    public var claimedDevices: [(hub: String, device: String, secretDigest: String?)] = []
    /// Rows this load could not read and moved aside.
    public var quarantined: [QuarantinedRecord] = []
    /// Rows kept aside in all, from this load and earlier ones.
    public var quarantinedTotal = 0
    public init() {}
}
