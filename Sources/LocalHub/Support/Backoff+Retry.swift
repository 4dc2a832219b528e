import NotificationHubs

extension Backoff {
    /// Runs `operation` until it succeeds, waiting the backoff between failures (each told
    /// to `failed`); nil when a try failed once the task was cancelled (it is always tried
    /// once). What the engine does with a store that failed to write: the write is retried,
    /// never half done, until the hub stops.
    mutating func retrying<T>(_ operation: () async throws -> T, failed: (any Error) -> Void) async -> T? {
        while true {
            do {
                return try await operation()
            } catch {
                failed(error)
                if Task.isCancelled { return nil }
                try? await Task.sleep(for: .seconds(fail()))
                if Task.isCancelled { return nil }
            }
        }
    }
}

extension Duration {
    /// The duration in seconds, as `Date` arithmetic takes it.
    var timeInterval: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
