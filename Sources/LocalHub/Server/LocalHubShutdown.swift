import ServiceLifecycle
import Synchronization

/// Stops a hub that `LocalHubServer.run` runs in this process, through the service group's
/// graceful shutdown: the server stops accepting, open requests finish, streams end, the
/// engine drains, and `run` returns.
public final class LocalHubShutdown: Sendable {
    private let state = Mutex<(group: ServiceGroup?, requested: Bool)>((nil, false))

    public init() {}

    /// Starts the shutdown; `run` returns once it is done. Before the hub runs, it is
    /// remembered.
    public func trigger() async {
        let group = state.withLock { state -> ServiceGroup? in
            state.requested = true
            return state.group
        }
        await group?.triggerGracefulShutdown()
    }

    func attach(_ group: ServiceGroup) async {
        let requested = state.withLock { state -> Bool in
            state.group = group
            return state.requested
        }
        if requested { await group.triggerGracefulShutdown() }
    }
}
