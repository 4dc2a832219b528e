import Foundation
import Testing

/// The one way the tests wait for something: polls `probe` every `interval` until it gives a
/// value, which it returns. When `timeout` passes first, the test fails where `eventually` was
/// called, with an issue naming `what` it waited for (evaluated then, so it may describe the
/// state at the end), and the wait throws so the test stops there. For waiting on an event
/// with a generous deadline, never for timing one.
@discardableResult
public func eventually<T>(
    _ what: @autoclosure () -> String, timeout: Duration = .seconds(90), every interval: Duration = .milliseconds(20),
    sourceLocation: SourceLocation = #_sourceLocation, _ probe: () async throws -> T?
) async throws -> T {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if let value = try await probe() { return value }
        try await Task.sleep(for: interval)
    }
    let last = try await probe()
    let comment = Comment(rawValue: last == nil ? "waited \(timeout) for \(what()) in vain" : "")
    return try #require(last, comment, sourceLocation: sourceLocation)
}

/// `eventually` for a condition: returns once `condition` holds; fails the test, naming `what`,
/// when `timeout` passes first.
public func eventually(
    _ what: @autoclosure () -> String, timeout: Duration = .seconds(90), every interval: Duration = .milliseconds(20),
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
) async throws {
    try await eventually(what(), timeout: timeout, every: interval, sourceLocation: sourceLocation) {
        try await condition() ? () : nil
    }
}
