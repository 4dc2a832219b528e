import Foundation
import LocalHubSupport

/// Runs blocking `work` (waiting for a child process, a tmux command) on a thread of its own
/// and awaits its result. Tests share Swift's cooperative pool, as wide as the machine has
/// cores, with the hubs and peers running in this process: a test that blocks a
/// pool thread while a hub shuts down starves every other test's requests (CI saw queued
/// requests time out waiting for a connection that only a starved task would have freed).
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.name = "test blocking call"
        thread.start()
    }
}

extension ChildProcess.Running {
    /// Waits for it to end without holding a pool thread; returns its exit status.
    @discardableResult
    public func exited() async -> Int32 {
        while true {
            if let code = exitStatus { return code }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
    }
}

/// `LocalHubTrust.verify`, asked again (ten times at most) while the hub is `.silent`: busy
/// cores can make a hub miss the 2 s probe, which the product reads as busy, not as distrust.
public func verifyAllowingBusyCores(_ state: LocalHubState) async throws -> LocalHubState {
    var outcome = await probe(state)
    for _ in 0..<9 {
        guard case .failure(let distrust) = outcome, distrust.kind == .silent else { break }
        outcome = await probe(state)
    }
    return try outcome.get()
}

private func probe(_ state: LocalHubState) async -> Result<LocalHubState, LocalHubTrust.Distrust> {
    do {
        return .success(try await LocalHubTrust.verify(state))
    } catch {
        return .failure(error)
    }
}
