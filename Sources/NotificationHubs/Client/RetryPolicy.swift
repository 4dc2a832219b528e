/// How `HubClient` retries throttled and failed calls, the one layer of the client that
/// retries: `backoff` between tries, `Retry-After` taking precedence (up to its maximum), at
/// most `maximumRetries` times, and only for transient failures (429, 5xx).
public struct RetryPolicy: Sendable, Hashable {
    public var maximumRetries: Int
    public var backoff: Backoff

    public init(maximumRetries: Int = 3, backoff: Backoff = Backoff()) {
        self.maximumRetries = maximumRetries
        self.backoff = backoff
    }

    /// No retries.
    public static let none = RetryPolicy(maximumRetries: 0)

    /// The wait before retry number `attempt` (0-based) after `error`, or `nil` to give up.
    public func delay(afterAttempt attempt: Int, error: HubError, unit: Double = Double.random(in: 0..<1)) -> Double? {
        guard error.isTransient, attempt < maximumRetries else { return nil }
        if let retryAfter = error.retryAfter { return min(max(retryAfter, 0), backoff.maximum) }
        return backoff.delay(attempt: attempt, unit: unit)
    }
}
