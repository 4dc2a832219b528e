import NotificationHubs

/// The retries of one request to a push service, the same for APNs, FCM and Web Push: at
/// most `limit`, each after the shared jittered backoff, or after the `Retry-After` the
/// service asked for when that is longer (honoured up to a minute).
struct ProviderRetries {
    /// The longest `Retry-After` honoured, in seconds.
    static let longestRetryAfter = 60.0

    private var backoff: Backoff
    private let limit: Int
    private var used = 0

    init(backoff: Backoff, limit: Int) {
        self.backoff = backoff
        self.limit = max(0, limit)
    }

    /// Whether an answer with `status` is worth another try (throttled, or the service failed).
    static func isTransient(_ status: Int) -> Bool { status == 429 || status >= 500 }

    /// Whether one more try is left; if so, waits before returning.
    mutating func another(retryAfter: Double? = nil) async -> Bool {
        guard used < limit else { return false }
        used += 1
        let seconds = max(backoff.fail(), min(max(retryAfter ?? 0, 0), Self.longestRetryAfter))
        try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
        return true
    }
}
