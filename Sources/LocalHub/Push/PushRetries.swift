import NotificationHubs

/// One try of one message at a push service, as its client reports it.
enum PushAttempt: Sendable, Equatable {
    /// The service's last word on the message.
    case final(PushAnswer)
    /// Worth another try (throttled, the service failed, or the request never left); `answer`
    /// stands when no try is left. `retryAfter`: what the service asked to wait.
    case again(PushAnswer, retryAfter: Duration?)

    /// The answer this try gave, whether or not another follows.
    var answer: PushAnswer {
        switch self {
        case .final(let answer), .again(let answer, _): answer
        }
    }
}

/// The retries of one message to a push service, the same for APNs, FCM and Web Push: at
/// most `limit`, each after the shared jittered backoff, or after the `Retry-After` the
/// service asked for when that is longer, and all of them within `longestWait` of waiting
/// in all. A message waiting holds nothing: no request slot, no task
/// (`PushFanOut` keeps it in a timer queue), so that a service that keeps asking to wait
/// delays only its own messages.
struct PushRetries: Sendable {
    /// The longest `Retry-After` honoured, and the longest a message waits between its tries
    /// in all. A service asking for more is given up on for this message.
    static let longestWait: Duration = .seconds(60)
    /// Any wait a service asks for past this is as good as forever: past `longestWait`.
    private static let forever: Duration = .seconds(86_400)

    private var backoff: Backoff
    private let limit: Int
    private var used = 0
    private var waited: Duration = .zero

    init(backoff: Backoff, limit: Int) {
        self.backoff = backoff
        self.limit = max(0, limit)
    }

    /// Whether an answer with `status` is worth another try (throttled, or the service failed).
    static func isTransient(_ status: Int) -> Bool { status == 429 || status >= 500 }

    /// A `Retry-After` header in seconds, as the services send it: nil when there is none or
    /// it is no number (an HTTP date is not read); a negative wait is none, one past a day or
    /// not a number (`nan`) is `forever`.
    static func retryAfter(_ header: String?) -> Duration? {
        guard let seconds = header.flatMap(Double.init) else { return nil }
        return seconds.isNaN ? forever : .seconds(min(max(seconds, 0), 86_400))
    }

    /// How long to wait before another try, counting it; nil when no try is left (the
    /// limit is reached, or the wait asked for would pass `longestWait` in all).
    mutating func delay(retryAfter: Duration?) -> Duration? {
        guard used < limit else { return nil }
        let asked = max(retryAfter ?? .zero, .zero)
        guard asked <= Self.longestWait else { return nil }
        let wait = max(Duration.seconds(backoff.fail()), asked)
        guard waited + wait <= Self.longestWait else { return nil }
        used += 1
        waited += wait
        return wait
    }

    /// One message on its own: tries until an answer is final, waiting between tries. (Many
    /// messages go through `PushFanOut`, which waits for them without a task each.)
    static func run(backoff: Backoff, limit: Int, _ attempt: () async -> PushAttempt) async -> PushAnswer {
        var retries = PushRetries(backoff: backoff, limit: limit)
        while true {
            let result = await attempt()
            guard case .again(let answer, let retryAfter) = result else { return result.answer }
            guard let wait = retries.delay(retryAfter: retryAfter), !Task.isCancelled else { return answer }
            try? await Task.sleep(for: wait)
        }
    }
}
