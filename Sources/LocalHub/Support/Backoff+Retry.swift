import NotificationHubs

extension Backoff {
    /// Runs `operation` until it succeeds, waiting the backoff between failures (each told
    /// to `failed`): what the engine does with a store that failed to write, so that a write
    /// is retried, never half done. Nil once the task is cancelled or `stopping` says the
    /// engine stops (it is always tried once), so that a store failing for good never holds
    /// a shutdown. An error no retry mends (`StoreFailure.isPermanent`) is thrown at once.
    mutating func retrying<T>(
        _ operation: () async throws -> T, failed: (any Error) -> Void, stopping: () -> Bool = { false }
    ) async throws -> T? {
        while true {
            do {
                return try await operation()
            } catch  where StoreFailure.isPermanent(error) {
                throw error
            } catch {
                failed(error)
                if Task.isCancelled || stopping() { return nil }
                try? await Task.sleep(for: .seconds(fail()))
                if Task.isCancelled || stopping() { return nil }
            }
        }
    }
}

extension Duration {
    /// The duration in seconds, as `Date` arithmetic takes it.
    var timeInterval: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
