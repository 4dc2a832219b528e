import Foundation
import HubTestSupport
import NotificationHubs
import Testing

@testable import LocalHub

/// The PostgreSQL change log is pruned up to what every live node has read (issue 30): on
/// `main` every write added a row that nothing removed (2,000 PUTs of one installation, 2,000
/// rows). A node not heard from holds nothing back, and one that comes back behind the point
/// pruned through reloads its tables before it answers.
@Suite(.tags(.live, .postgres), .fullSuiteOnly) struct ChangeLogPruningTests {
    /// Two nodes of one new database, as two hub processes open it, with their engines
    /// started (not running: a test runs those it wants following).
    static func nodes() async throws -> (url: String, [(store: PostgresHubStore, engine: HubEngine)]) {
        let url = try await PostgresServer.shared().createDatabase()
        var nodes: [(store: PostgresHubStore, engine: HubEngine)] = []
        for name in ["a", "b"] {
            let store = try await PostgresHubStore.started(url: url, node: name, logger: TestHub.quietLogger)
            let engine = HubEngine(store: store, configuration: .init(hubs: ["news"]), logger: TestHub.quietLogger)
            try await engine.start()
            nodes.append((store, engine))
        }
        return (url, nodes)
    }

    /// Rows of the change log of the database at `url` that meet `condition`.
    static func count(_ url: String, where condition: String = "true") async throws -> Int {
        let answer = try await PostgresServer.shared().psql("SELECT COUNT(*) FROM change WHERE \(condition)", database: url)
        return try #require(Int(answer.trimmingCharacters(in: .whitespacesAndNewlines)), "psql said: \(answer)")
    }

    static func put(_ engine: HubEngine, _ id: String, tags: [String], device: String = "ab12") async throws {
        let installation = try newsInstallation(id, device: device, tags: tags).validatedForStorage(lastUpdate: "x")
        _ = try await engine.write(.putInstallation(hub: "news", installation))
    }

    /// Writes on `engine` at once, so that they share commits as a busy node's do.
    static func putAll(_ engine: HubEngine, _ writes: [(id: String, tags: [String])]) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for write in writes { group.addTask { try await put(engine, write.id, tags: write.tags) } }
            try await group.waitForAll()
        }
    }

    /// One installation PUT 3,000 times on one node while both follow and prune as their
    /// retention does: the log holds about one row after every pass, however many PUTs came
    /// before it, and the other node serves each round's last PUT.
    @Test func theLogStaysBoundedWhileOneInstallationIsPutThousandsOfTimes() async throws {
        let (url, nodes) = try await Self.nodes()
        let (a, b) = (nodes[0], nodes[1])
        let running = [Task { await a.engine.run() }, Task { await b.engine.run() }]
        defer {
            for task in running { task.cancel() }
            for node in nodes { node.store.shutdown() }
        }
        let start = try await a.store.changeHead()
        var largest = 0
        for round in 0..<15 {
            try await Self.putAll(a.engine, (0..<199).map { ("busy", ["t\($0)"]) })
            try await Self.put(a.engine, "busy", tags: ["round\(round)"])
            #expect(try await b.engine.installation(hub: "news", id: "busy")?.tags == ["round\(round)"])
            #expect(try await a.engine.installation(hub: "news", id: "busy")?.tags == ["round\(round)"])
            await b.engine.coordination.retain(now: Date())
            // The engine's retention pass (as its loop runs it) prunes the change log too.
            _ = try await a.engine.retain()
            largest = max(largest, try await Self.count(url))
        }
        // Every PUT was logged, and all but the last are gone.
        #expect(try await a.store.changeHead() - start >= 3000)
        #expect(largest == 1)
        #expect(try await Self.count(url, where: "seq = \(try await a.store.changeHead())") == 1)
    }

    /// b stops following (as a paused process does) and is first still live: it holds the
    /// log back. Then it is not heard from past the live window: the log is pruned past it,
    /// and when it comes back it reloads its tables and serves every write acknowledged on a
    /// meanwhile, deletions and released claims included, which no change left in the log
    /// could tell it.
    @Test func aNodeNotHeardFromHoldsNothingBackAndReloadsWhenItComesBack() async throws {
        let (url, nodes) = try await Self.nodes()
        let (a, b) = (nodes[0], nodes[1])
        let running = Task { await a.engine.run() }
        defer {
            running.cancel()
            for node in nodes { node.store.shutdown() }
        }
        let (kept, released) = (randomDevice(), randomDevice())
        try await Self.putAll(a.engine, [("stays", ["World"]), ("gone", ["World"]), ("changed", ["World"])])
        _ = try await a.engine.write(.claimDevice(hub: "news", device: kept))
        _ = try await a.engine.write(.claimDevice(hub: "news", device: released))
        #expect(try await b.engine.installation(hub: "news", id: "gone") != nil)
        #expect(try await b.engine.claimedDevices(hub: "news") == [kept, released])
        let bRead = try await a.store.changeHead()

        // Still live (b noted its position when it started): what b has not read stays.
        try await Self.putAll(a.engine, (0..<100).map { ("early\($0)", ["World"]) })
        _ = try await a.engine.installation(hub: "news", id: "stays")
        await a.engine.coordination.retain(now: Date())
        #expect(try await Self.count(url, where: "id LIKE 'early%'") == 100)

        // b is not heard from for longer than the live window, while a writes on.
        _ = try await a.engine.write(.deleteInstallation(hub: "news", id: "gone"))
        _ = try await a.engine.write(.releaseDevice(hub: "news", device: released))
        try await Self.putAll(a.engine, (0..<200).map { ("changed", ["t\($0)"]) })
        try await Self.put(a.engine, "changed", tags: ["Sports"])
        try await Self.putAll(a.engine, (0..<300).map { ("late\($0)", ["Politics"]) })
        _ = try await a.engine.installation(hub: "news", id: "stays")
        let later = Date().addingTimeInterval(SharedDatabase.liveWindow + 60)
        let pruned = await a.engine.coordination.retain(now: later)
        #expect(pruned >= 600)
        #expect(try await Self.count(url, where: "seq <= \(bRead + 1)") == 0)
        #expect(try await Self.count(url) <= 1)

        // Back: b's first read reloads, then answers as a would.
        #expect(try await b.engine.installation(hub: "news", id: "gone") == nil)
        #expect(try await b.engine.installation(hub: "news", id: "stays")?.tags == ["World"])
        #expect(try await b.engine.installation(hub: "news", id: "changed")?.tags == ["Sports"])
        #expect(try await b.engine.claimedDevices(hub: "news") == [kept])
        for n in 0..<100 { #expect(try await b.engine.installation(hub: "news", id: "early\(n)") != nil) }
        for n in 0..<300 { #expect(try await b.engine.installation(hub: "news", id: "late\(n)")?.tags == ["Politics"]) }
        #expect(b.engine.installationCount == 402)
        // And it follows from there: a write on a after the reload reaches it.
        _ = try await a.engine.write(.deleteInstallation(hub: "news", id: "stays"))
        #expect(try await b.engine.installation(hub: "news", id: "stays") == nil)
    }

    /// The store's side: reading from behind the point pruned through is refused (a reader
    /// that took the rows left for all of them would miss what was pruned); the last change
    /// stays, so numbering goes on after it and a reader at the head misses nothing; of
    /// changes to one row only the last is kept.
    @Test func readingFromBehindThePrunedPointIsRefusedAndNumberingGoesOn() async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let (store, reader) = (
            try await PostgresHubStore.started(url: url, node: "a", logger: TestHub.quietLogger),
            try await PostgresHubStore.started(url: url, node: "b", logger: TestHub.quietLogger)
        )
        defer {
            store.shutdown()
            reader.shutdown()
        }
        for n in 0..<5 {
            try await store.apply([
                .upsertInstallation(hub: "news", try HubStoreConformanceTests.installation("i\(n)")),
                .upsertInstallation(hub: "news", try HubStoreConformanceTests.installation("same", tags: ["t\(n)"])),
            ])
        }
        let now = Date()
        // b has read through 4, a through all 10; b is live.
        try await reader.noteChangePosition(4, now: now)
        try await store.noteChangePosition(10, now: now)
        // 1…4 pruned, and the changes of `same` after 4 but its last (6, 8).
        #expect(try await store.pruneChanges(now: now, liveWindow: 300) == 4 + 2)
        #expect(try await reader.changes(after: 4, limit: 100).map(\.seq) == [5, 7, 9, 10])
        await #expect(throws: ChangeLogPruned.self) { try await reader.changes(after: 3, limit: 100) }
        // b is forgotten: all but the last change go.
        try await store.noteChangePosition(10, now: now + 400)
        #expect(try await store.pruneChanges(now: now + 400, liveWindow: 300) == 3)
        #expect(try await store.changeHead() == 10)
        await #expect(throws: ChangeLogPruned.self) { try await reader.changes(after: 4, limit: 100) }
        #expect(try await reader.changes(after: 9, limit: 100).map(\.seq) == [10])
        try await store.apply([.deleteInstallation(hub: "news", id: "i0")])
        let next = try await reader.changes(after: 10, limit: 100)
        #expect(next.map(\.seq) == [11])
        if case .installation(_, let id, let installation)? = next.first?.row {
            #expect(id == "i0" && installation == nil)
        } else {
            Issue.record("the change after the last one kept is not the deletion of i0: \(next)")
        }
    }
}
