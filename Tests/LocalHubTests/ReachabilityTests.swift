import Foundation
import HubTestSupport
import Logging
import PostgresNIO
import Synchronization
import TestTiers
import Testing

@testable import LocalHub

/// `Reachability`, the watchdog's shell: an operation raced against its watch, probes run by
/// `run()`, and a cancelled caller that stops waiting at once.
@Suite struct ReachabilityTests {
    /// A probe that never gets an answer, counting how often it was asked.
    final class SilentProbe: ReachabilityProbe {
        let asked = Atomic(0)
        func ask() async throws {
            asked.add(1, ordering: .relaxed)
            throw CancellationError()
        }
        func close() {}
    }

    /// Whether `task` ends within `timeout` (waited for as an event, not a speed).
    static func ends<T>(_ task: Task<T, any Error>, within timeout: Duration) async -> Bool {
        let ended = Atomic(false)
        let deadline = ContinuousClock.now + timeout
        Task {
            _ = await task.result
            ended.store(true, ordering: .relaxed)
        }
        while !ended.load(ordering: .relaxed), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return ended.load(ordering: .relaxed)
    }

    /// Short timings, so that the silence comes in a test's time.
    static let short = DatabaseWatchdog.Timings(
        silence: .milliseconds(400), impatience: .milliseconds(100), longest: .seconds(30),
        probeAfter: .milliseconds(100))

    @Test func anOperationNothingAnswersFailsAsUnavailableAfterProbing() async throws {
        let probe = SilentProbe()
        let reachability = Reachability(probe: probe, timings: Self.short, logger: TestHub.quietLogger)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await reachability.run() }
            await #expect(throws: StoreUnavailable.self) {
                try await reachability.withDeadline { try await Task.sleep(for: .seconds(600)) }
            }
            #expect(probe.asked.load(ordering: .relaxed) >= 1)
            // Found unreachable: the next operation fails too, and its probe is asked at once.
            // (Past the least time between probes first.)
            try await Task.sleep(for: .milliseconds(150))
            let asked = probe.asked.load(ordering: .relaxed)
            await #expect(throws: StoreUnavailable.self) {
                try await reachability.withDeadline { try await Task.sleep(for: .seconds(600)) }
            }
            // Its probe is asked, whenever the busy machine gets to it.
            let deadline = ContinuousClock.now + .seconds(30)
            while probe.asked.load(ordering: .relaxed) == asked, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(probe.asked.load(ordering: .relaxed) > asked)
            reachability.shutdown()
        }
    }

    @Test func anOperationThatAnswersReturnsItsValueAndARefusalIsAnAnswer() async throws {
        let reachability = Reachability(probe: SilentProbe(), timings: Self.short, logger: TestHub.quietLogger)
        #expect(try await reachability.withDeadline { 42 } == 42)
        await #expect(throws: StoreFailure.self) {
            try await reachability.withDeadline { () async throws -> Int in throw StoreFailure(description: "refused") }
        }
    }

    @Test func aCancelledCallerStopsWaitingBeforeTheSilence() async throws {
        let patient = DatabaseWatchdog.Timings(silence: .seconds(60), longest: .seconds(120))
        let reachability = Reachability(probe: SilentProbe(), timings: patient, logger: TestHub.quietLogger)
        let started = Atomic(false)
        let caller = Task {
            try await reachability.withDeadline {
                started.store(true, ordering: .relaxed)
                try await Task.sleep(for: .seconds(600))
            }
        }
        while !started.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(10)) }
        caller.cancel()
        #expect(await Self.ends(caller, within: .seconds(30)), "the cancelled caller still waits")
        await #expect(throws: (any Error).self) { try await caller.value }
    }
}

/// A cancelled caller of the PostgreSQL store stops waiting at once while the database
/// answers nothing: its statement, sent, waits for an answer whatever cancellation says, so
/// it is left to finish in a task of its own, and the pool's connection is not closed under it.
@Suite(.tags(.live, .postgres), .fullSuiteOnly) struct ReachabilityOnADatabaseTests {
    @Test func aCancelledCallerStopsWaitingWhileTheDatabaseIsHeld() async throws {
        let server = try await PostgresServer.shared()
        let database = try #require(URL(string: try await server.createDatabase())?.lastPathComponent)
        try await DelayingProxy.with(to: server.port) { proxy in
            let url = "postgres://\(PostgresServer.user)@127.0.0.1:\(proxy.port)/\(database)"
            let store = try await PostgresHubStore.started(url: url, logger: TestHub.quietLogger)
            defer { store.shutdown() }
            // A connection open at full speed first: the caller's statement waits on it.
            #expect(try await store.changeHead() == 0)
            proxy.set(.held)
            let caller = Task { try await store.changeHead() }
            try await Task.sleep(for: .milliseconds(300))
            caller.cancel()
            #expect(
                await ReachabilityTests.ends(caller, within: .seconds(30)),
                "the cancelled caller still waits for the held database")
            // Cancelled, not failed as unavailable once the 5 s of silence were over.
            await #expect(throws: CancellationError.self) { try await caller.value }
            // The held statement is answered once the database answers again, and the store
            // goes on.
            proxy.set(.through)
            #expect(try await store.changeHead() == 0)
        }
    }
}
