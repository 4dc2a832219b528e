import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// A node follows its own commits as it makes them, without reading them back from the
/// database, when their change-log numbers come next (`SharedDatabase.Cursor`); otherwise it
/// reads them in order with the other nodes'. These tests hold it to that.
@Suite(.tags(.live, .postgres), .fullSuiteOnly) struct NodeOwnCommitsTests {
    /// The numbers a commit's changes took come back from `apply`, one per change, and are
    /// the ones other nodes read; a commit of sends alone takes none.
    @Test func aCommitReturnsTheChangeNumbersItTook() async throws {
        let stores = try await SharedHubStoreTests.nodes(2)
        defer { for store in stores { store.shutdown() } }
        let head = try await stores[0].changeHead()
        let numbers = try await stores[0].apply([
            .upsertInstallation(hub: "news", try HubStoreConformanceTests.installation("a")),
            .insertNotification(HubStoreConformanceTests.notification("n1")),
            .claimDevice(hub: "news", device: "ab12", at: Date()),
            .upsertInstallation(hub: "news", try HubStoreConformanceTests.installation("b")),
        ])
        #expect(numbers == head + 1...head + 3)
        #expect(try await stores[1].changes(after: head, limit: 10).map(\.seq) == Array(head + 1...head + 3))
        #expect(try await stores[1].apply([.insertNotification(HubStoreConformanceTests.notification("n2"))]) == nil)
        // Two nodes committing at once take numbers that do not overlap and leave no gap.
        let taken = try await withThrowingTaskGroup(of: [ClosedRange<Int64>].self) { group in
            for (n, store) in stores.enumerated() {
                group.addTask {
                    var taken: [ClosedRange<Int64>] = []
                    for k in 0..<30 {
                        let ids = (0...(k % 3)).map { "n\(n)-\(k)-\($0)" }
                        let range = try await store.apply(
                            try ids.map { .upsertInstallation(hub: "news", try HubStoreConformanceTests.installation($0)) })
                        if let range { taken.append(range) }
                    }
                    return taken
                }
            }
            var all: [ClosedRange<Int64>] = []
            for try await part in group { all += part }
            return all.sorted { $0.lowerBound < $1.lowerBound }
        }
        #expect(taken.count == 60)
        #expect(zip(taken, taken.dropFirst()).allSatisfy { $0.upperBound + 1 == $1.lowerBound })
        #expect(taken.first?.lowerBound == head + 4)
    }

    /// A batch resolved at a position (a node whose peers were quiet does not catch up
    /// first) is written only if nothing was committed anywhere after that position; else
    /// nothing of it is, and the writer resolves it again.
    @Test func aBatchAtAPositionIsWrittenOnlyIfNothingCameAfterIt() async throws {
        let stores = try await SharedHubStoreTests.nodes(2)
        defer { for store in stores { store.shutdown() } }
        func put(_ id: String) throws -> [(hub: String, installation: Installation)] {
            [("news", try HubStoreConformanceTests.installation(id))]
        }
        let head = try await stores[0].changeHead()
        #expect(try await stores[0].upsertAlone(try put("a"), ifAt: head) == head + 1...head + 1)
        // Behind its own commit, and behind another node's: nothing is written.
        #expect(try await stores[0].upsertAlone(try put("b"), ifAt: head) == nil)
        #expect(
            try await stores[1].apply([.upsertInstallation(hub: "news", try HubStoreConformanceTests.installation("c"))]) == head
                + 2...head + 2)
        #expect(try await stores[0].upsertAlone(try put("b"), ifAt: head + 1) == nil)
        let ids = { try await stores[1].load().installations.map(\.installation.installationId).sorted() }
        #expect(try await ids() == ["a", "c"])
        #expect(try await stores[1].changes(after: head, limit: 10).map(\.seq) == [head + 1, head + 2])
        // At the head it is written, numbered next.
        #expect(try await stores[0].upsertAlone(try put("b"), ifAt: head + 2) == head + 3...head + 3)
        #expect(try await ids() == ["a", "b", "c"])
    }

    /// A wake-up names the node that committed; a node is not woken by its own commits.
    @Test func aNodeIgnoresItsOwnWakeUps() {
        #expect(StoreWakeup(payload: StoreWakeup.changes.payload(from: "node1"), me: "node1") == nil)
        #expect(StoreWakeup(payload: StoreWakeup.changes.payload(from: "node1"), me: "node2") == .changes)
        #expect(StoreWakeup(payload: StoreWakeup.deliveries.payload(from: "node1"), me: "node2") == .deliveries)
        #expect(StoreWakeup(payload: StoreWakeup.deliveries.payload(from: "a:b"), me: "a:b") == nil)
        #expect(StoreWakeup(payload: StoreWakeup.deliveries.payload(from: "a:b"), me: "a") == .deliveries)
        // An earlier version's payloads, a kind alone, are another node's.
        #expect(StoreWakeup(payload: "c", me: "node1") == .changes)
        #expect(StoreWakeup(payload: "d", me: "node1") == .deliveries)
    }

    /// The cursor's two ways on: a page applies only what lies past it, and a node's own
    /// numbers are taken only when they come next.
    @Test func theCursorAppliesEachNumberOnceAndInOrder() {
        let cursor = SharedDatabase.Cursor()
        cursor.position = 10
        var applied: [Int64] = []
        #expect(cursor.take(11...12) { applied += [11, 12] })
        #expect(cursor.position == 12)
        // Read before the commit was taken: 11 and 12 are not applied again.
        cursor.advance([11, 12, 13] as [Int64], through: 13, number: { $0 }) { applied += $0 }
        #expect(applied == [11, 12, 13])
        // Numbers after one unread, and numbers read already, are left to the log.
        #expect(!cursor.take(15...16) { applied.append(-1) })
        #expect(!cursor.take(12...13) { applied.append(-1) })
        // A page that ends before the position changes nothing.
        cursor.advance([12] as [Int64], through: 12, number: { $0 }) { applied += $0 }
        #expect(applied == [11, 12, 13])
        #expect(cursor.position == 13)
    }

    /// Two nodes write installations at once, over and over: each node's commits interleave
    /// with the other's, so some of its own come next and are applied at once and some are
    /// read back. Each write is of an installation of its own and of one both nodes write.
    /// Afterwards each node answers every installation as the database holds it. A node that
    /// set its own writes over the other's later ones would answer a stale shared one; one
    /// that moved past the other's unread changes would miss some of its own ones.
    @Test func nodesWritingAtOnceEndAsTheDatabase() async throws {
        let stores = try await SharedHubStoreTests.nodes(2)
        defer { for store in stores { store.shutdown() } }
        let engines = stores.map { HubEngine(store: $0, hubs: ["news"]) }
        for engine in engines { try await engine.start() }
        let running = engines.map { engine in Task { await engine.run() } }
        defer {
            for task in running { task.cancel() }
            for engine in engines { engine.stop() }
        }
        let shared = (0..<8).map { "shared-\($0)" }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (n, engine) in engines.enumerated() {
                for writer in 0..<4 {
                    group.addTask {
                        for round in 0..<40 {
                            let own = "n\(n)w\(writer)r\(round)"
                            let id = round.isMultiple(of: 2) ? own : shared[(round + writer) % shared.count]
                            _ = try await engine.write(
                                .putInstallation(hub: "news", try HubStoreConformanceTests.installation(id, tags: [own])))
                            // Read your own write (a shared one another writer may have replaced since).
                            let read = try await engine.installation(hub: "news", id: id)
                            #expect(id != own || read?.tags == [own])
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let stored = try await stores[0].load()
        let truth = Dictionary(
            uniqueKeysWithValues: stored.installations.map { ($0.installation.installationId, $0.installation.tags) })
        #expect(truth.count == shared.count + 2 * 4 * 20)
        for engine in engines {
            var wrong: [String] = []
            for (id, tags) in truth where try await engine.installation(hub: "news", id: id)?.tags != tags { wrong.append(id) }
            #expect(wrong.isEmpty, "\(wrong.count) installations answered unlike the database: \(wrong.sorted().prefix(5))")
        }
    }
}
