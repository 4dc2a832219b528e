/// The one backoff of the product: capped exponential delays (`base`, twice that, … up to
/// `maximum`) with jitter, so that clients which failed together (every terminal of a hub
/// that restarted) do not come back together. Used by `RetryPolicy` for calls, by the
/// stream's reconnection, by registration retries and by the hub's own store retries.
public struct Backoff: Sendable, Hashable {
    public var base: Double
    public var maximum: Double
    /// The share of each delay left to chance: with 0.5 a delay is between half and all of
    /// its ceiling ("equal jitter"); 0 makes delays exact.
    public var jitter: Double
    /// Failures since the last success.
    public private(set) var failures = 0

    public init(base: Double = 1, maximum: Double = 60, jitter: Double = 0.5) {
        self.base = base
        self.maximum = maximum
        self.jitter = min(max(jitter, 0), 1)
    }

    /// The longest wait before retry number `attempt` (0-based).
    public func ceiling(attempt: Int) -> Double {
        min(maximum, base * Double(1 << min(max(attempt, 0), 30)))
    }

    /// The wait before retry number `attempt`: the ceiling less a random share of
    /// `jitter` of it; `unit` is the random draw, in 0..<1.
    public func delay(attempt: Int, unit: Double = Double.random(in: 0..<1)) -> Double {
        ceiling(attempt: attempt) * (1 - jitter * min(max(unit, 0), 1))
    }

    /// Counts a failure and returns how long to wait before the next try.
    public mutating func fail() -> Double {
        failures += 1
        return delay(attempt: failures - 1)
    }

    /// A success: the next failure waits `base` again.
    public mutating func reset() { failures = 0 }
}
