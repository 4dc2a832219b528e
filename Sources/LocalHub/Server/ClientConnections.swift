import Foundation
import NIOCore
import NotificationHubs
import Synchronization

/// The connections each client holds open, so that no client takes every connection the hub
/// may have (`--max-connections`) and leaves none for the others. A trusted proxy carries
/// many clients and is not counted (its clients are, by the limits above).
final class ClientConnections: Sendable {
    let limit: Int
    let trusted: TrustedProxies
    private let open = Mutex<[String: Int]>([:])

    /// `limit` connections per client; 0: no limit.
    init(limit: Int, trusted: TrustedProxies) {
        self.limit = limit
        self.trusted = trusted
    }

    /// Counts a new connection from `peer`; the client it counts under, or nil when the
    /// client holds its limit already (close the connection) or nothing is counted.
    func opened(peer: SocketAddress?) -> Admission {
        guard limit > 0, let bytes = peer.flatMap(RequestClient.addressBytes).map(IPAddress.canonical),
            !trusted.contains(bytes)
        else { return .uncounted }
        let key = RequestClient.of(peer: peer, forwardedFor: [], trusted: .none).key
        return open.withLock { open in
            let count = open[key, default: 0]
            guard count < limit else { return .refused(key) }
            open[key] = count + 1
            return .counted(key)
        }
    }

    /// A counted connection closed.
    func closed(_ key: String) {
        open.withLock { open in
            let left = open[key, default: 1] - 1
            open[key] = left > 0 ? left : nil
        }
    }

    /// Clients holding connections now.
    var clients: Int { open.withLock { $0.count } }

    enum Admission: Equatable {
        case uncounted
        case counted(String)
        case refused(String)
    }
}
