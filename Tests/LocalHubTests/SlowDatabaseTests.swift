import Foundation
import HubTestSupport
import NIOCore
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// A slow database is not a down one (issue 27). The PostgreSQL store waits for a database
/// that answers, however slowly, and reports unavailable one that answers nothing; a store
/// that found it unreachable finds it again by itself, even while every answer takes longer
/// than the shortened wait. Each test reaches the run's server through a proxy of its own
/// (`DelayingProxy`), which slows or silences what the server says; its store judges by
/// itself whether the database answers.
@Suite(.tags(.live, .postgres), .fullSuiteOnly) struct SlowDatabaseTests {
    /// Runs `body` with a store on a new database of the run's server, reached through a proxy.
    static func withSlowableStore(_ body: (PostgresHubStore, DelayingProxy) async throws -> Void) async throws {
        let server = try await PostgresServer.shared()
        let database = try #require(URL(string: try await server.createDatabase())?.lastPathComponent)
        try await DelayingProxy.with(to: server.port) { proxy in
            let url = "postgres://\(PostgresServer.user)@127.0.0.1:\(proxy.port)/\(database)"
            let store = try await PostgresHubStore.started(url: url, node: "slow", logger: TestHub.quietLogger)
            defer { store.shutdown() }
            try await body(store, proxy)
        }
    }

    /// `body`, its failure recorded with `name` and how long it took.
    static func step<T>(_ name: String, _ body: () async throws -> T) async throws -> T {
        let started = ContinuousClock.now
        do {
            return try await body()
        } catch {
            Issue.record("\(name) failed after \(ContinuousClock.now - started): \(error)")
            throw error
        }
    }

    static func installation(_ id: String) throws -> HubMutation {
        .upsertInstallation(hub: "news", try HubStoreConformanceTests.installation(id))
    }

    /// Every answer 1.2 s late: a read takes longer than the shortened wait, and a write (a
    /// transaction of six statements, each waiting for its answer) longer than the window in
    /// which nothing at all answers; each succeeds, as nothing else of the process asks
    /// that server meanwhile.
    @Test func answersSlowerThanTheWindowAreWaitedFor() async throws {
        try await Self.withSlowableStore { store, proxy in
            // The connection opened at full speed first: the rule under test is about the
            // answers to operations, not the connection's start-up (each of its round trips
            // late too, which made the first write longer than any operation may take).
            #expect(try await store.changeHead() == 0)
            proxy.set(.delayed(.milliseconds(1200)))
            // Each step named with its time when it fails: on a machine kept busy, a step has
            // gone past the 60 s any operation may take.
            try await Self.step("the first write") { try await store.apply([Self.installation("a")]) }
            for read in 0..<3 {
                #expect(try await Self.step("read \(read + 1)") { try await store.changeHead() } == 1)
            }
            try await Self.step("the second write") { try await store.apply([Self.installation("b")]) }
            proxy.set(.through)
            #expect(try await store.changes(after: 0, limit: 10).map(\.seq) == [1, 2])
        }
    }

    /// Nothing answers: the store reports the database unavailable. Then it answers again,
    /// each answer 1.5 s late, longer than the shortened wait that follows: the store finds
    /// it reachable by itself, and from then on reads and writes succeed though it stays slow.
    @Test func aStoreThatFoundItUnreachableFindsItAgainWhileItStaysSlow() async throws {
        try await Self.withSlowableStore { store, proxy in
            proxy.set(.held)
            await #expect(throws: StoreUnavailable.self) { try await store.changeHead() }
            await #expect(throws: StoreUnavailable.self) { try await store.changeHead() }
            proxy.set(.delayed(.milliseconds(1500)))
            var reachable = false
            let deadline = ContinuousClock.now + .seconds(90)
            while !reachable, ContinuousClock.now < deadline {
                reachable = (try? await store.changeHead()) != nil
            }
            #expect(reachable, "the store did not find the database again within 90 s")
            for _ in 0..<3 { #expect(try await store.changeHead() == 0) }
            try await store.apply([Self.installation("a")])
            #expect(try await store.changeHead() == 1)
        }
    }
}
