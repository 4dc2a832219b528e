import Foundation

/// Polls `probe` every 20 ms until it gives a value, which it returns; throws, naming `what`,
/// when `timeout` passes first. For waiting on an event with a generous deadline, never for
/// timing one.
public func eventually<T>(_ what: String, timeout: Duration = .seconds(60), _ probe: () async throws -> T?) async throws
    -> T
{
    let deadline = ContinuousClock.now + timeout
    while true {
        if let value = try await probe() { return value }
        guard ContinuousClock.now < deadline else {
            throw TestHubError(description: "waited \(timeout) for \(what) in vain")
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}
