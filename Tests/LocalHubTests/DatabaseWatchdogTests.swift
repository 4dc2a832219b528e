import Testing

@testable import LocalHub

/// The database watchdog, step by step: events in, actions out, no clock (each instant is
/// `start` plus a number of seconds).
@Suite struct DatabaseWatchdogTests {
    typealias Watchdog = DatabaseWatchdog
    static let start = ContinuousClock.now

    static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }

    static func operation(_ number: Int) -> Watchdog.OperationID { .init(number: number) }

    /// A watchdog with the standard timings: silence 5 s, impatience 1 s, longest 60 s, a
    /// probe after 1 s (taking at most 4 s).
    static func watchdog() -> Watchdog { Watchdog(timings: .standard, now: start) }

    static func fails(_ actions: [Watchdog.Action]) -> [Watchdog.OperationID] {
        actions.compactMap { if case .fail(let operation, _) = $0 { operation } else { nil } }
    }

    @Test func anOperationThatAnswersAsksForNothing() {
        var watchdog = Self.watchdog()
        #expect(watchdog.handle(.operationStarted(Self.operation(1), at: Self.at(0))) == [])
        #expect(watchdog.handle(.timePassed(Self.at(0.5))) == [])
        #expect(watchdog.handle(.operationAnswered(Self.operation(1), at: Self.at(0.6))) == [])
        #expect(!watchdog.isWaiting(Self.operation(1)))
        #expect(watchdog.lastAnswer == Self.at(0.6))
        #expect(watchdog.reachable)
    }

    @Test func anOperationThatWaitsAsksForAProbeAfterASecondAndAtMostOneASecond() {
        var watchdog = Self.watchdog()
        _ = watchdog.handle(.operationStarted(Self.operation(1), at: Self.at(0)))
        #expect(watchdog.nextCheck(for: Self.operation(1)) == Self.at(1))
        #expect(watchdog.handle(.timePassed(Self.at(0.9))) == [])
        #expect(watchdog.handle(.timePassed(Self.at(1))) == [.startProbe])
        #expect(watchdog.probing)
        // One at a time: none while it runs.
        #expect(watchdog.handle(.timePassed(Self.at(1.5))) == [])
        // It failed at once; the next comes a second after it started, not before.
        #expect(watchdog.handle(.probeFailed(at: Self.at(1.6))) == [])
        #expect(watchdog.handle(.timePassed(Self.at(1.9))) == [])
        #expect(watchdog.nextCheck(for: Self.operation(1)) == Self.at(2))
        #expect(watchdog.handle(.timePassed(Self.at(2))) == [.startProbe])
    }

    @Test func aProbeThatAnswersIsAnAnswerThatPutsOffTheSilence() {
        var watchdog = Self.watchdog()
        _ = watchdog.handle(.operationStarted(Self.operation(1), at: Self.at(0)))
        _ = watchdog.handle(.timePassed(Self.at(1)))
        #expect(watchdog.handle(.probeAnswered(at: Self.at(2))) == [])
        #expect(watchdog.lastAnswer == Self.at(2))
        // Five seconds after its start, but only three after the probe's answer: it waits.
        #expect(watchdog.handle(.timePassed(Self.at(5))) == [.startProbe])
        #expect(watchdog.handle(.probeAnswered(at: Self.at(5.5))) == [])
        #expect(Self.fails(watchdog.handle(.timePassed(Self.at(10)))) == [])
        #expect(watchdog.isWaiting(Self.operation(1)))
    }

    @Test func nothingAnsweringForTheSilenceFailsTheOperationAndMarksTheDatabaseUnreachable() {
        var watchdog = Self.watchdog()
        _ = watchdog.handle(.operationStarted(Self.operation(1), at: Self.at(0)))
        _ = watchdog.handle(.timePassed(Self.at(1)))
        // Failed at once: the next may not start before 2 s, and no check comes before 5 s.
        #expect(watchdog.handle(.probeFailed(at: Self.at(1.5))) == [])
        let actions = watchdog.handle(.timePassed(Self.at(5)))
        #expect(actions == [.fail(Self.operation(1), reason: "the database answered nothing for 5 s")])
        #expect(!watchdog.reachable)
        #expect(!watchdog.isWaiting(Self.operation(1)))
    }

    @Test func aPatientOperationWhoseSilenceIsOverWaitsForTheProbeUnderWay() {
        var watchdog = Self.watchdog()
        _ = watchdog.handle(.operationStarted(Self.operation(1), at: Self.at(0)))
        _ = watchdog.handle(.timePassed(Self.at(4.5)))
        #expect(watchdog.probing)
        #expect(watchdog.handle(.timePassed(Self.at(5.5))) == [])
        #expect(watchdog.isWaiting(Self.operation(1)))
        // The probe's word: nothing. Now it fails.
        #expect(Self.fails(watchdog.handle(.probeFailed(at: Self.at(8.5)))) == [Self.operation(1)])
        #expect(!watchdog.reachable)
    }

    @Test func aPatientOperationWaitsForTheWordOfAProbeThatThenAnswers() {
        var watchdog = Self.watchdog()
        _ = watchdog.handle(.operationStarted(Self.operation(1), at: Self.at(0)))
        _ = watchdog.handle(.timePassed(Self.at(4.5)))
        #expect(watchdog.handle(.timePassed(Self.at(5.5))) == [])
        #expect(watchdog.handle(.probeAnswered(at: Self.at(6))) == [])
        #expect(Self.fails(watchdog.handle(.timePassed(Self.at(7)))) == [])
        #expect(watchdog.isWaiting(Self.operation(1)))
    }

    /// Found unreachable: the operation waited its silence and the probe got no answer.
    static func unreachable(at seconds: Double = 0) -> Watchdog {
        var watchdog = watchdog()
        _ = watchdog.handle(.operationStarted(operation(1), at: at(seconds)))
        _ = watchdog.handle(.timePassed(at(seconds + 1)))
        _ = watchdog.handle(.probeFailed(at: at(seconds + 1.5)))
        _ = watchdog.handle(.timePassed(at(seconds + 5)))
        return watchdog
    }

    @Test func aPatientOperationWhoseChecksCameLateAsksAProbeBeforeItFails() {
        var watchdog = Self.watchdog()
        _ = watchdog.handle(.operationStarted(Self.operation(1), at: Self.at(0)))
        // The first check, five seconds late: nothing was asked, so nothing is known yet.
        #expect(watchdog.handle(.timePassed(Self.at(6))) == [.startProbe])
        #expect(watchdog.isWaiting(Self.operation(1)))
        #expect(watchdog.reachable)
        #expect(Self.fails(watchdog.handle(.probeFailed(at: Self.at(6.5)))) == [Self.operation(1)])
        #expect(!watchdog.reachable)
    }

    @Test func onceUnreachableANewOperationProbesAtOnceAndWaitsOnlyTheImpatience() {
        var watchdog = Self.unreachable()
        #expect(!watchdog.reachable)
        #expect(watchdog.handle(.operationStarted(Self.operation(2), at: Self.at(6))) == [.startProbe])
        #expect(watchdog.nextCheck(for: Self.operation(2)) == Self.at(7))
        #expect(watchdog.handle(.timePassed(Self.at(6.9))) == [])
        let actions = watchdog.handle(.timePassed(Self.at(7)))
        #expect(actions == [.fail(Self.operation(2), reason: "the database answered nothing for 1 s")])
    }

    @Test func anOperationAlreadyWaitingWhenTheDatabaseIsFoundUnreachableKeepsItsSilence() {
        var watchdog = Self.watchdog()
        _ = watchdog.handle(.operationStarted(Self.operation(1), at: Self.at(0)))
        _ = watchdog.handle(.operationStarted(Self.operation(2), at: Self.at(3)))
        _ = watchdog.handle(.timePassed(Self.at(1)))
        _ = watchdog.handle(.probeFailed(at: Self.at(1.5)))
        #expect(Self.fails(watchdog.handle(.timePassed(Self.at(5)))) == [Self.operation(1)])
        #expect(!watchdog.reachable)
        // The second started while it was reachable: it waits its five seconds, not one.
        #expect(Self.fails(watchdog.handle(.timePassed(Self.at(6)))) == [])
        #expect(watchdog.isWaiting(Self.operation(2)))
        // Its probe failed, the next is under way when its five seconds are over: it waits for its word.
        #expect(watchdog.handle(.probeFailed(at: Self.at(7))) == [.startProbe])
        #expect(Self.fails(watchdog.handle(.timePassed(Self.at(8)))) == [])
        #expect(Self.fails(watchdog.handle(.probeFailed(at: Self.at(8.5)))) == [Self.operation(2)])
    }

    @Test func theFirstAnswerMakesItReachableAgain() {
        var watchdog = Self.unreachable()
        #expect(!watchdog.reachable)
        _ = watchdog.handle(.operationStarted(Self.operation(2), at: Self.at(5.5)))
        #expect(watchdog.handle(.probeAnswered(at: Self.at(6))) == [.markReachable])
        #expect(watchdog.reachable)
        // Once more, found by an operation that succeeds.
        watchdog = Self.unreachable(at: 7)
        #expect(!watchdog.reachable)
        _ = watchdog.handle(.operationStarted(Self.operation(3), at: Self.at(13)))
        #expect(watchdog.handle(.operationAnswered(Self.operation(3), at: Self.at(13.5))) == [.markReachable])
        #expect(watchdog.handle(.operationAnswered(Self.operation(4), at: Self.at(13.6))) == [])
    }

    @Test func anOperationThatFailsWithoutAnAnswerIsNoAnswer() {
        var watchdog = Self.watchdog()
        _ = watchdog.handle(.operationStarted(Self.operation(1), at: Self.at(0)))
        _ = watchdog.handle(.operationStarted(Self.operation(2), at: Self.at(0)))
        #expect(watchdog.handle(.operationFailed(Self.operation(1), at: Self.at(0.5))) == [])
        #expect(!watchdog.isWaiting(Self.operation(1)))
        #expect(watchdog.lastAnswer == Self.start)
        _ = watchdog.handle(.timePassed(Self.at(1)))
        _ = watchdog.handle(.probeFailed(at: Self.at(1.2)))
        #expect(Self.fails(watchdog.handle(.timePassed(Self.at(5)))) == [Self.operation(2)])
    }

    @Test func noOperationWaitsLongerThanTheLongestWhateverAnswers() {
        var watchdog = Self.watchdog()
        _ = watchdog.handle(.operationStarted(Self.operation(1), at: Self.at(0)))
        var second = 1.0
        while second < 60 {
            #expect(Self.fails(watchdog.handle(.timePassed(Self.at(second)))) == [])
            _ = watchdog.handle(.probeAnswered(at: Self.at(second + 0.5)))
            second += 1
        }
        #expect(watchdog.nextCheck(for: Self.operation(1)) == Self.at(60))
        let actions = watchdog.handle(.timePassed(Self.at(60)))
        #expect(actions == [.fail(Self.operation(1), reason: "the database did not finish the operation within 60 s")])
        // Answers kept coming: it is not unreachable.
        #expect(watchdog.reachable)
        #expect(watchdog.nextCheck(for: Self.operation(1)) == nil)
    }
}
