import NotificationHubs
import Testing

@testable import LocalHub

/// The retries of one message to a push service, and the `Retry-After` the services send.
@Suite struct PushRetriesTests {
    static let exact = Backoff(base: 1, maximum: 60, jitter: 0)

    @Test func aRetryAfterInSecondsIsReadAsADurationAndAnythingElseIsNone() {
        #expect(PushRetries.retryAfter("2") == .seconds(2))
        #expect(PushRetries.retryAfter("0.5") == .milliseconds(500))
        #expect(PushRetries.retryAfter("-5") == .zero)
        #expect(PushRetries.retryAfter(nil) == nil)
        #expect(PushRetries.retryAfter("Wed, 21 Oct 2015 07:28:00 GMT") == nil)
    }

    @Test func aServiceThatAsksForMoreThanTheLongestWaitIsGivenUpOn() {
        for header in ["61", "1e300", "inf", "nan"] {
            var retries = PushRetries(backoff: Self.exact, limit: 5)
            #expect(retries.delay(retryAfter: PushRetries.retryAfter(header)) == nil, "Retry-After: \(header)")
        }
    }

    @Test func eachWaitIsTheBackoffOrTheRetryAfterWhicheverIsLongerWithinTheLongestWaitInAll() {
        var retries = PushRetries(backoff: Self.exact, limit: 10)
        #expect(retries.delay(retryAfter: nil) == .seconds(1))
        #expect(retries.delay(retryAfter: .seconds(30)) == .seconds(30))
        #expect(retries.delay(retryAfter: nil) == .seconds(4))
        // 35 s waited: another 30 would pass the minute.
        #expect(retries.delay(retryAfter: .seconds(30)) == nil)
        #expect(PushRetries.longestWait == .seconds(60))
    }

    @Test func noWaitIsGivenPastTheLimit() {
        var retries = PushRetries(backoff: Self.exact, limit: 2)
        #expect(retries.delay(retryAfter: nil) != nil)
        #expect(retries.delay(retryAfter: nil) != nil)
        #expect(retries.delay(retryAfter: nil) == nil)
    }
}
