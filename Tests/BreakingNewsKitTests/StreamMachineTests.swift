import BreakingNewsKit
import NotificationHubs
import Testing

/// The stream connection, transition by transition, without I/O.
struct StreamMachineTests {
    @Test func startOpensFromTheResumePoint() {
        var machine = StreamMachine(lastEventId: 41)
        #expect(machine.handle(.start) == [.report(.connecting), .open(lastEventId: 41)])
        #expect(machine.state == .connecting)
    }

    @Test func openedGoesOnlineAndDeliveriesMoveTheResumePoint() {
        var machine = StreamMachine()
        _ = machine.handle(.start)
        #expect(machine.handle(.opened) == [.report(.online)])
        #expect(machine.state == .live)
        #expect(machine.handle(.delivery(seq: 5)) == [])
        #expect(machine.handle(.delivery(seq: 3)) == [])
        #expect(machine.lastEventId == 5)
    }

    /// A device the hub does not know (yet) waits for its registration without backing off,
    /// and says so rather than "reconnecting".
    @Test func aDeviceTheHubDoesNotKnowWaitsWithoutBackingOff() {
        var machine = StreamMachine(lastEventId: 7, backoff: Backoff(jitter: 0))
        _ = machine.handle(.start)
        for _ in 0..<5 {
            #expect(
                machine.handle(.unregistered)
                    == [.close, .report(.notRegistered), .wait(seconds: StreamMachine.unregisteredRetry)])
            #expect(machine.backoff.failures == 0)
            #expect(machine.handle(.retryTimerFired) == [.report(.connecting), .open(lastEventId: 7)])
        }
        #expect(machine.handle(.opened) == [.report(.online)])
    }

    @Test func disconnectsBackOffFromOneToSixtySeconds() {
        var machine = StreamMachine(backoff: Backoff(jitter: 0))
        _ = machine.handle(.start)
        var delays: [Double] = []
        for _ in 0..<9 {
            let actions = machine.handle(.closed(reason: "cut"))
            #expect(machine.state == .waiting)
            guard case .wait(let seconds)? = actions.last else {
                Issue.record("no wait in \(actions)")
                return
            }
            #expect(actions.contains(.report(.reconnecting(seconds: seconds, reason: "cut"))))
            delays.append(seconds)
            #expect(machine.handle(.retryTimerFired) == [.report(.connecting), .open(lastEventId: nil)])
        }
        #expect(delays == [1, 2, 4, 8, 16, 32, 60, 60, 60])
    }

    /// By default the waits are jittered, each within the upper half of its step.
    @Test func reconnectionsAreJittered() {
        var machine = StreamMachine()
        _ = machine.handle(.start)
        for ceiling in [1.0, 2, 4, 8] {
            guard case .wait(let seconds)? = machine.handle(.closed(reason: "cut")).last else {
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
        _ = machine.handle(.closed(reason: "a"))
        _ = machine.handle(.retryTimerFired)
        _ = machine.handle(.closed(reason: "b"))
        _ = machine.handle(.retryTimerFired)
        _ = machine.handle(.opened)
        _ = machine.handle(.delivery(seq: 9))
        let actions = machine.handle(.closed(reason: "c"))
        #expect(actions.last == .wait(seconds: 1))
        // And the reconnection resumes after the last delivery.
        #expect(machine.handle(.retryTimerFired) == [.report(.connecting), .open(lastEventId: 9)])
    }

    @Test func refusalStopsForGood() {
        var machine = StreamMachine()
        _ = machine.handle(.start)
        #expect(machine.handle(.refused(reason: "no sandbox")) == [.close, .report(.offline("no sandbox"))])
        #expect(machine.state == .stopped)
        #expect(machine.handle(.retryTimerFired) == [])
        #expect(machine.handle(.start) == [])
    }

    @Test func stopFromAnyStateClosesOnce() {
        for setup in [[], [StreamMachine.Event.start], [.start, .opened], [.start, .closed(reason: "x")]] {
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
        #expect(machine.state == .connecting)
    }

    @Test func aNewEpochForgetsTheResumePoint() {
        var machine = StreamMachine(lastEventId: 500)
        machine.resetResumePoint()
        _ = machine.handle(.start)
        _ = machine.handle(.delivery(seq: 2))
        #expect(machine.lastEventId == 2)
    }
}
