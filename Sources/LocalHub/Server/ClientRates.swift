import Foundation
import NIOCore
import NotificationHubs
import Synchronization

/// What one client may do in a while, so that no client exhausts what every client shares
/// (the claim table, a hub's byte budget, the streams). Each rate is a token bucket: full
/// at the start, refilled evenly over the hour; 0 turns a rate off. Counted per node.
public struct ClientRates: Sendable, Hashable {
    /// New devices an hour: claims of a token not claimed before, installations and legacy
    /// registrations that did not exist. Also the most at once.
    public var newDevicesPerHour: Int
    /// Bytes of installation and registration bodies written an hour; also the most at once.
    public var bytesPerHour: Int
    /// Device streams open at once.
    public var streams: Int
    /// Connections open at once (`ClientConnections`).
    public var connections: Int

    public init(newDevicesPerHour: Int = 600, bytesPerHour: Int = 16 << 20, streams: Int = 256, connections: Int = 512) {
        self.newDevicesPerHour = newDevicesPerHour
        self.bytesPerHour = bytesPerHour
        self.streams = streams
        self.connections = connections
    }

    /// No limit at all (tests and benchmarks that play thousands of clients from one address).
    public static let unlimited = ClientRates(newDevicesPerHour: 0, bytesPerHour: 0, streams: 0, connections: 0)
}
