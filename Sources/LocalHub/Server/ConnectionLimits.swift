import Foundation
import Logging
import NIOCore

/// The connection limits the server runs with, fitted to the process's descriptor limit.
struct ConnectionLimits {
    let connections: Int
    /// Three quarters of the connections: the rest stay for requests.
    var streams: Int { max(1, connections * 3 / 4) }
    let idleTimeout: TimeAmount
    let requestTimeout: TimeAmount

    /// Descriptors kept for the database, the files and the listening socket.
    static let reserve = 64

    init(configuration: LocalHubConfiguration, logger: Logger) {
        let available = Self.raiseDescriptorLimit()
        connections = max(1, min(configuration.maximumConnections, available - Self.reserve))
        if connections < configuration.maximumConnections {
            logger.warning(
                "serving at most \(connections) connections: the descriptor limit is \(available)")
        }
        idleTimeout = TimeAmount(Duration.seconds(configuration.idleTimeout))
        requestTimeout = TimeAmount(Duration.seconds(configuration.requestTimeout))
    }

    /// Raises the soft limit on open descriptors to the hard one; returns the limit now.
    static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }
}
