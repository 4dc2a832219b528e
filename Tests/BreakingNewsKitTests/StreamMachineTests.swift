import BreakingNewsKit
import NotificationHubs
import Testing

/// The stream connection, transition by transition, without I/O.
struct StreamMachineTests {
    static func delivery(_ seq: Int64, epoch: String? = "e1") -> BuiltInPushDelivery {
        BuiltInPushDelivery(
            seq: seq, notificationId: "n\(seq)", hub: "news", device: "ab", template: nil, tags: "World", deliveredAt: "t",
            payload: .object([("aps", .object([("alert", .string("x"))]))]), epoch: epoch)
    }

    /// A machine that is live, its stream open.
    static func live(_ machine: StreamMachine = StreamMachine(backoff: Backoff(jitter: 0))) -> StreamMachine {
        var machine = machine
        _ = machine.handle(.start)
        _ = machine.handle(.opened)
        return machine
    }

    @Test func startOpensFromTheResumePoint() {
        var machine = StreamMachine(lastEventId: 41, epoch: "e1")
        #expect(machine.handle(.start) == [.report(.connecting), .open(lastEventId: 41, epoch: "e1", startingHub: false)])
        #expect(machine.state == .connecting)
    }

    /// Issue 28, finding 10: what the stream brings goes through the machine — it asks for
    /// the log write and moves the resume point only once the write is done.
    @Test func deliveriesAreAppendedThenTheResumePointMoves() {
        var machine = StreamMachine()
        _ = machine.handle(.start)
        #expect(machine.handle(.opened) == [.report(.online), .read])
        #expect(machine.state == .live)
        let batch = [Self.delivery(5), Self.delivery(3)]
        #expect(machine.handle(.received(batch)) == [.append(batch)])
        #expect(machine.lastEventId == nil, "not in the log yet: a cut now must bring them again")
        #expect(machine.handle(.appended(batch)) == [.read])
        #expect(machine.lastEventId == 5)
        #expect(machine.epoch == "e1")
        #expect(machine.handle(.received([])) == [.read])
    }

    /// The epoch is the machine's: a delivery of a new delivery log starts the resume point again.
    @Test func aNewEpochStartsTheResumePointAgain() {
        var machine = Self.live(StreamMachine(lastEventId: 500, epoch: "e1"))
        _ = machine.handle(.appended([Self.delivery(2, epoch: "e2")]))
        #expect(machine.lastEventId == 2)
        #expect(machine.epoch == "e2")
        _ = machine.handle(.failed(.unreachable("cut")))
        _ = machine.handle(.retryTimerFired)
        #expect(machine.state == .connecting)
    }

    @Test func disconnectsCloseAndBackOffFromOneToSixtySeconds() {
        var machine = StreamMachine(backoff: Backoff(jitter: 0))
        _ = machine.handle(.start)
        var delays: [Double] = []
        for _ in 0..<9 {
            let actions = machine.handle(.failed(.unreachable("cut")))
            #expect(machine.state == .waiting(quiet: false))
            #expect(actions.first == .close, "the stream is closed before anything else")
            guard case .wait(let seconds)? = actions.last else {
                Issue.record("no wait in \(actions)")
                return
            }
            #expect(actions.contains(.report(.reconnecting(seconds: seconds, reason: "cut"))))
            delays.append(seconds)
            #expect(
                machine.handle(.retryTimerFired) == [
                    .report(.connecting), .open(lastEventId: nil, epoch: nil, startingHub: false),
                ])
        }
        #expect(delays == [1, 2, 4, 8, 16, 32, 60, 60, 60])
    }

    /// By default the waits are jittered, each within the upper half of its step.
    @Test func reconnectionsAreJittered() {
        var machine = StreamMachine()
        _ = machine.handle(.start)
        for ceiling in [1.0, 2, 4, 8] {
            guard case .wait(let seconds)? = machine.handle(.failed(.unreachable("cut"))).last else {
                Issue.record("no wait")
                return
            }
            #expect(seconds >= ceiling / 2 && seconds <= ceiling)
            _ = machine.handle(.retryTimerFired)
        }
    }

    @Test func aSuccessfulConnectionResetsTheBackoff() {
        var machine = StreamMachine(backoff: Backoff(jitter: 0))
        _ = machine.handle(.start)
        _ = machine.handle(.failed(.unreachable("a")))
        _ = machine.handle(.retryTimerFired)
        _ = machine.handle(.failed(.unreachable("b")))
        _ = machine.handle(.retryTimerFired)
        _ = machine.handle(.opened)
        _ = machine.handle(.appended([Self.delivery(9)]))
        // The open stream ends: a quiet try at once, and one after the first step of the
        // backoff, resuming after the last delivery; then the outage is said.
        #expect(machine.handle(.failed(.unreachable("c"))) == [.close, .wait(seconds: 0)])
        #expect(machine.handle(.retryTimerFired) == [.open(lastEventId: 9, epoch: "e1", startingHub: false)])
        #expect(machine.handle(.failed(.unreachable("c"))) == [.close, .wait(seconds: 1)], "the backoff starts again")
        #expect(machine.handle(.retryTimerFired) == [.open(lastEventId: 9, epoch: "e1", startingHub: false)])
        let actions = machine.handle(.failed(.unreachable("c")))
        #expect(actions == [.close, .report(.reconnecting(seconds: 2, reason: "c")), .wait(seconds: 2)])
        #expect(
            machine.handle(.retryTimerFired) == [.report(.connecting), .open(lastEventId: 9, epoch: "e1", startingHub: false)])
    }

    /// Issue 28, finding 10: why it is offline is typed; a refusal and a hub without the push
    /// service give up, and say which.
    @Test func refusalsGiveUpWithTheirReason() {
        for (failure, reason) in [
            (StreamFailure.refused("401 bad key"), OfflineReason.refused("401 bad key")),
            (.noPushService, .noPushService),
        ] {
            var machine = StreamMachine()
            _ = machine.handle(.start)
            #expect(machine.handle(.failed(failure)) == [.close, .report(.offline(reason))])
            #expect(machine.state == .gaveUp(reason))
            #expect(reason.gaveUp)
            #expect(machine.handle(.retryTimerFired) == [])
            #expect(machine.handle(.retryNow(startingHub: true)) == [])
            #expect(machine.handle(.start) == [])
        }
    }

    /// Issue 44: the hub ends a stream when its token expires, and the receiver ends it
    /// before, when the token is due for renewal. Either way it is opened again at once, from
    /// the resume point, saying nothing and backing off not at all: the window stays online.
    @Test func aStreamThatEndsIsOpenedAgainQuietlyAtOnce() {
        var machine = Self.live()
        _ = machine.handle(.received([Self.delivery(7)]))
        _ = machine.handle(.appended([Self.delivery(7)]))
        let backoff = machine.backoff
        #expect(machine.handle(.ended) == [.close, .open(lastEventId: 7, epoch: "e1", startingHub: false)])
        #expect(machine.state == .connecting)
        #expect(machine.backoff == backoff, "no backoff")
        #expect(machine.handle(.opened) == [.read], "still online: nothing to say")
        // Again and again, as each token comes due: never a word.
        for _ in 0..<3 {
            #expect(machine.handle(.ended) == [.close, .open(lastEventId: 7, epoch: "e1", startingHub: false)])
            #expect(machine.handle(.opened) == [.read])
        }
        // A hub that stops as it ends the stream: one quiet try more, then what it is.
        _ = machine.handle(.ended)
        #expect(machine.handle(.failed(.unreachable("refused"))) == [.close, .wait(seconds: 1)])
        #expect(machine.handle(.retryTimerFired) == [.open(lastEventId: 7, epoch: "e1", startingHub: false)])
        #expect(machine.handle(.failed(.hubStopped)) == [.close, .report(.offline(.hubStopped)), .wait(seconds: 1)])
    }

    /// A stopped local hub is said once and looked for each second, quietly; `r` starts it.
    /// The stream it cut is tried again at once, and that try says the hub stopped — not
    /// "reconnecting".
    @Test func aStoppedHubIsSaidOnceAndRStartsIt() {
        var machine = Self.live()
        #expect(machine.handle(.failed(.unreachable("the hub closed the stream"))) == [.close, .wait(seconds: 0)])
        #expect(machine.handle(.retryTimerFired) == [.open(lastEventId: nil, epoch: nil, startingHub: false)])
        // Stopping: its file still there, its port closed; a moment later, gone.
        #expect(machine.handle(.failed(.unavailable("pid 7 does not listen on port 9"))) == [.close, .wait(seconds: 1)])
        #expect(machine.handle(.retryTimerFired) == [.open(lastEventId: nil, epoch: nil, startingHub: false)])
        #expect(machine.handle(.failed(.hubStopped)) == [.close, .report(.offline(.hubStopped)), .wait(seconds: 1)])
        #expect(machine.handle(.retryTimerFired) == [.open(lastEventId: nil, epoch: nil, startingHub: false)], "quietly")
        #expect(machine.handle(.failed(.hubStopped)) == [.close, .wait(seconds: 1)], "said once")
        #expect(
            machine.handle(.retryNow(startingHub: true)) == [
                .report(.connecting), .open(lastEventId: nil, epoch: nil, startingHub: true),
            ])
        #expect(machine.handle(.opened) == [.report(.online), .read])
    }

    /// A device the hub does not know yet (a 404 that says so) is not retried in a loop: it
    /// waits long, or until a registration rings.
    @Test func anUnregisteredDeviceWaitsForARegistration() {
        var machine = StreamMachine(backoff: Backoff(jitter: 0))
        _ = machine.handle(.start)
        #expect(machine.handle(.failed(.notRegistered)) == [.close, .report(.offline(.notRegistered)), .wait(seconds: 5)])
        #expect(!OfflineReason.notRegistered.gaveUp)
        #expect(
            machine.handle(.retryNow(startingHub: false)) == [
                .report(.connecting), .open(lastEventId: nil, epoch: nil, startingHub: false),
            ])
    }

    /// Not being known is not a failure of the connection: however often the hub says so, the
    /// wait does not back off, the resume point is kept, and the header is not repeated.
    @Test func aDeviceTheHubDoesNotKnowWaitsWithoutBackingOff() {
        var machine = StreamMachine(lastEventId: 7, epoch: "e1", backoff: Backoff(jitter: 0))
        _ = machine.handle(.start)
        #expect(machine.handle(.failed(.notRegistered)) == [.close, .report(.offline(.notRegistered)), .wait(seconds: 5)])
        for _ in 0..<5 {
            #expect(machine.handle(.retryTimerFired) == [.open(lastEventId: 7, epoch: "e1", startingHub: false)])
            #expect(machine.handle(.failed(.notRegistered)) == [.close, .wait(seconds: 5)])
            #expect(machine.backoff.failures == 0)
        }
        #expect(machine.handle(.retryTimerFired) == [.open(lastEventId: 7, epoch: "e1", startingHub: false)])
        #expect(machine.handle(.opened) == [.report(.online), .read])
    }

    /// 429 (or a 5xx with Retry-After) waits as long as the hub asked, up to five minutes.
    @Test func throttlingWaitsAsLongAsAsked() {
        var machine = StreamMachine(backoff: Backoff(jitter: 0))
        _ = machine.handle(.start)
        #expect(
            machine.handle(.failed(.throttled("busy", retryAfter: 30))) == [
                .close, .report(.reconnecting(seconds: 30, reason: "busy")), .wait(seconds: 30),
            ])
        _ = machine.handle(.retryTimerFired)
        #expect(machine.handle(.failed(.throttled("busy", retryAfter: 9999))).last == .wait(seconds: 300))
        _ = machine.handle(.retryTimerFired)
        #expect(machine.handle(.failed(.throttled("busy", retryAfter: nil))).last == .wait(seconds: 4), "no Retry-After: backoff")
    }

    /// 404s and the throttling statuses, as the receiver classifies them.
    @Test func hubAnswersAreClassified() {
        #expect(
            BuiltInPushClient.failure(.status(404, detail: "Device abc is not registered"), doing: "the stream") == .notRegistered
        )
        #expect(
            BuiltInPushClient.failure(.status(404, detail: "The messaging entity 'x' could not be found"), doing: "the stream")
                == .noPushService)
        #expect(
            BuiltInPushClient.failure(.status(429, detail: "slow down", retryAfter: 12), doing: "the stream")
                == .throttled("the hub is busy (the stream, 429)", retryAfter: 12))
        #expect(
            BuiltInPushClient.failure(.status(503, detail: "full", retryAfter: 30), doing: "the stream")
                == .throttled("the hub is busy (the stream, 503)", retryAfter: 30))
        guard case .refused = BuiltInPushClient.failure(.status(401, detail: "ExpiredToken"), doing: "the stream") else {
            Issue.record("401 is a refusal")
            return
        }
        guard case .unreachable = BuiltInPushClient.failure(.status(500, detail: "oops"), doing: "the stream") else {
            Issue.record("500 without Retry-After is tried again")
            return
        }
    }

    @Test func stopFromAnyStateClosesOnce() {
        for setup in [[], [StreamMachine.Event.start], [.start, .opened], [.start, .failed(.unreachable("x"))]] {
            var machine = StreamMachine()
            for event in setup { _ = machine.handle(event) }
            #expect(machine.handle(.stop) == [.close, .report(.stopped)])
            #expect(machine.handle(.stop) == [])
        }
    }

    @Test func eventsThatDoNotFitAreIgnored() {
        var machine = StreamMachine()
        #expect(machine.handle(.opened) == [])
        #expect(machine.handle(.retryTimerFired) == [])
        _ = machine.handle(.start)
        #expect(machine.handle(.retryTimerFired) == [])
        #expect(machine.handle(.retryNow(startingHub: true)) == [], "a try is under way")
        #expect(machine.handle(.received([Self.delivery(1)])) == [], "not open yet")
        #expect(machine.state == .connecting)
    }
}

/// What `log` lists: `--since` takes the times a person types.
struct LogQueryTests {
    @Test func sinceReadsWhatPeopleType() {
        let now = W3CDate.parse("2026-11-21T12:00:00Z")!
        #expect(LogQuery.time("90s", now: now) == now.addingTimeInterval(-90))
        #expect(LogQuery.time("2h", now: now) == now.addingTimeInterval(-7200))
        #expect(LogQuery.time("3d", now: now) == now.addingTimeInterval(-3 * 86_400))
        #expect(LogQuery.time("2026-11-21T11:00:00Z", now: now) == W3CDate.parse("2026-11-21T11:00:00Z"))
        for text in ["today", "yesterday", "17:30", "17:30:05", "2026-11-20", "2026-11-20 08:15"] {
            #expect(LogQuery.time(text, now: now) != nil, "\(text)")
        }
        #expect(LogQuery.time("yesterday", now: now)! < LogQuery.time("today", now: now)!)
        for text in ["", "soon", "25:00", "2026-02-30", "2026-11-21 7:5", "-3h", "h"] {
            #expect(LogQuery.time(text, now: now) == nil, "\(text)")
        }
    }
}

/// Issue 30: a gap the hub tells of is written to the log, then the resume point moves past it.
struct StreamMachineGapTests {
    @Test func aGapIsRecordedThenTheResumePointMovesPastIt() {
        var machine = StreamMachineTests.live(StreamMachine(lastEventId: 3, epoch: "e1", backoff: Backoff(jitter: 0)))
        let gap = BuiltInPushGap(through: 40, expired: 12)
        #expect(machine.handle(.gap(gap)) == [.recordGap(gap, epoch: "e1")])
        #expect(machine.lastEventId == 3, "not in the log yet: a cut now must tell it again")
        #expect(machine.handle(.gapRecorded(gap)) == [.read])
        #expect(machine.lastEventId == 40)
        #expect(machine.epoch == "e1")
    }
}
