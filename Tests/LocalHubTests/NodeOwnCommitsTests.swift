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

    /// A batch resolved against tables at a position is written only if nothing committed
    /// after it names a record the batch read (for a PUT, another id of it in another case;
    /// for a read that is exact, the id itself), and no more changes came after it than its
    /// room; else nothing of it is, and the writer resolves it again. Both ways a batch is
    /// written are held to it: installation PUTs alone (one call) and a transaction.
    @Test func aBatchIsWrittenOnlyIfNothingAfterItsPositionChangesWhatItRead() async throws {
        let stores = try await SharedHubStoreTests.nodes(2)
        defer { for store in stores { store.shutdown() } }
        func put(_ id: String) throws -> HubMutation {
            .upsertInstallation(hub: "news", try HubStoreConformanceTests.installation(id))
        }
        func read(_ id: String, exact: Bool = false) -> Resolution.Read {
            .init(kind: .installation, hub: "news", id: id, exact: exact)
        }
        let head = try await stores[0].changeHead()
        let ids = { try await stores[1].load().installations.map(\.installation.installationId).sorted() }
        #expect(
            try await stores[0].apply([put("a")], resolvedAt: .init(position: head, reads: [read("a")]))
                == .committed(head + 1...head + 1))
        #expect(try await stores[1].apply([put("c")]) == head + 2...head + 2)
        // Another case of an id changed since: nothing is written, in either way.
        #expect(try await stores[0].apply([put("A")], resolvedAt: .init(position: head, reads: [read("A")])) == .moved)
        #expect(
            try await stores[0].apply(
                [put("A"), .deleteInstallation(hub: "news", id: "zz")],
                resolvedAt: .init(position: head, reads: [read("A"), read("zz", exact: true)])) == .moved)
        #expect(try await ids() == ["a", "c"])
        // A PUT of the id itself does not depend on what it replaces; an exact read does.
        #expect(
            try await stores[0].apply([put("a")], resolvedAt: .init(position: head, reads: [read("a")]))
                == .committed(head + 3...head + 3))
        #expect(
            try await stores[1].apply(
                [put("a"), .deleteInstallation(hub: "news", id: "c")],
                resolvedAt: .init(position: head + 2, reads: [read("a", exact: true), read("c", exact: true)])) == .moved)
        #expect(try await ids() == ["a", "c"])
        // More changes since the position than the room: nothing written.
        #expect(try await stores[0].apply([put("d")], resolvedAt: .init(position: head, room: 2, reads: [read("d")])) == .moved)
        #expect(
            try await stores[0].apply([put("d")], resolvedAt: .init(position: head, room: 3, reads: [read("d")]))
                == .committed(head + 4...head + 4))
        #expect(
            try await stores[1].apply(
                [put("e"), .deleteInstallation(hub: "news", id: "c")],
                resolvedAt: .init(position: head + 3, room: 1, reads: [read("e"), read("c", exact: true)]))
                == .committed(head + 5...head + 6))
        #expect(try await ids() == ["a", "d", "e"])
        #expect(try await stores[1].changes(after: head, limit: 10).map(\.seq) == Array(head + 1...head + 6))
        // A position behind the point the log was pruned through cannot be checked: moved,
        // both ways (its node then reloads its tables).
        _ = try await stores[0].rows("UPDATE change_counter SET change_pruned = \(head + 5)")
        #expect(try await stores[0].apply([put("f")], resolvedAt: .init(position: head + 4, reads: [read("f")])) == .moved)
        #expect(
            try await stores[0].apply(
                [put("f"), .deleteInstallation(hub: "news", id: "e")],
                resolvedAt: .init(position: head + 4, reads: [read("f"), read("e", exact: true)])) == .moved)
        #expect(
            try await stores[0].apply([put("f")], resolvedAt: .init(position: head + 6, reads: [read("f")]))
                == .committed(head + 7...head + 7))
        // Without the counter (a database this version did not migrate) a commit is an error,
        // never a conflict.
        _ = try await stores[0].rows("DELETE FROM change_counter")
        await #expect(throws: (any Error).self) {
            try await stores[0].apply(
                [put("g"), .deleteInstallation(hub: "news", id: "f")],
                resolvedAt: .init(position: head + 7, reads: [read("g"), read("f", exact: true)]))
        }
        await #expect(throws: (any Error).self) {
            try await stores[0].apply([put("g")], resolvedAt: .init(position: head + 7, reads: [read("g")]))
        }
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

    /// A node's own commit is applied at once even with other nodes' changes before it unread,
    /// and no change read after at its number or before is set over it; later ones are.
    @Test func theChangeCursorAppliesOwnCommitsAtOnceAndNothingOlderOverThem() {
        let cursor = SharedDatabase.ChangeCursor()
        cursor.position = 10
        let a = ChangedRecord(kind: .installation, hub: "news", id: "a")
        let b = ChangedRecord(kind: .installation, hub: "News", id: "b")
        func change(_ seq: Int64, _ id: String) -> StoredChange {
            StoredChange(seq: seq, row: .installation(hub: "news", id: id, nil))
        }
        var applied: [String] = []
        #expect(cursor.take(11...11, records: [a]) { applied.append("own 11") })
        #expect(cursor.position == 11)
        // Another node's 12 is unread: the own 13 is applied now, ahead of the position.
        #expect(!cursor.take(13...13, records: [a]) { applied.append("own 13") })
        #expect(cursor.position == 11 && cursor.applied == [a: 13])
        // The page brings 12 (a as it was before 13) and 13 itself: neither is set over it.
        cursor.advance([change(12, "a"), StoredChange(seq: 13, row: .applied(a))], through: 13) {
            applied += $0.map { "read \($0.seq)" }
        }
        #expect(applied == ["own 11", "own 13"])
        #expect(cursor.position == 13 && cursor.applied.isEmpty, "a record is forgotten once the log is read past it")
        // Another node's change after the own commit is applied.
        #expect(!cursor.take(15...15, records: [b]) { applied.append("own 15") })
        cursor.advance([change(14, "b"), change(15, "b"), change(16, "b"), change(16, "a")], through: 16) {
            applied += $0.map { "read \($0.seq) \($0.record.id)" }
        }
        #expect(applied == ["own 11", "own 13", "own 15", "read 16 b", "read 16 a"])
        // A commit the log was read past is in the tables already; a reload forgets every record.
        #expect(cursor.take(12...13, records: [a]) { applied.append("again") })
        #expect(!cursor.take(20...20, records: [a]) { applied.append("own 20") })
        cursor.position = 18
        #expect(cursor.applied.isEmpty)
        #expect(applied.last == "own 20")
    }

    /// Two nodes write one installation by turns, each write answered before the next: every
    /// node ends with the last commit, whichever node made it and in whatever order it read
    /// the other's.
    @Test func twoNodesWritingOneInstallationByTurnsBothEndOnTheLastCommit() async throws {
        try await Self.withTwoNodes { stores, engines in
            for round in 0..<30 {
                let engine = engines[round % 2]
                _ = try await engine.write(
                    .putInstallation(hub: "news", try HubStoreConformanceTests.installation("one", tags: ["r\(round)"])))
                #expect(try await engine.installation(hub: "news", id: "one")?.tags == ["r\(round)"])
            }
            for engine in engines {
                #expect(try await engine.installation(hub: "news", id: "one")?.tags == ["r29"])
            }
            #expect(
                try await stores[1].load().installations.first { $0.installation.installationId == "one" }?.installation.tags == [
                    "r29"
                ])
        }
    }

    /// Two nodes write installations at once, over and over: each node's commits interleave
    /// with the other's, so some of its own come next and are applied at once and some are
    /// read back. Each write is of an installation of its own and of one both nodes write.
    /// Afterwards each node answers every installation as the database holds it. A node that
    /// set its own writes over the other's later ones would answer a stale shared one; one
    /// that moved past the other's unread changes would miss some of its own ones.
    @Test func nodesWritingAtOnceEndAsTheDatabase() async throws {
        try await Self.withTwoNodes { stores, engines in
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
                for (id, tags) in truth where try await engine.installation(hub: "news", id: id)?.tags != tags {
                    wrong.append(id)
                }
                #expect(wrong.isEmpty, "\(wrong.count) installations answered unlike the database: \(wrong.sorted().prefix(5))")
            }
        }
    }
}

extension NodeOwnCommitsTests {
    /// Two ids that differ only in case are one installation, or registration (the case
    /// rule), also when two nodes are asked for them at the same moment: one is written, the other refused, and
    /// the database holds one. A node that resolved its PUT against tables behind the other
    /// node's commit, and committed whatever came between, wrote both.
    @Test(arguments: [true, false]) func idsDifferingInCaseWrittenOnTwoNodesAtOnceAreOne(installations: Bool) async throws {
        try await Self.withTwoNodes { stores, engines in
            let rounds = 150
            let written = try await withThrowingTaskGroup(of: Int.self) { group in
                for (n, engine) in engines.enumerated() {
                    for writer in 0..<4 {
                        group.addTask {
                            var written = 0
                            for round in stride(from: writer, to: rounds, by: 4) {
                                let id = n == 0 ? "case-\(round)" : "CASE-\(round)"
                                do {
                                    _ = try await engine.write(
                                        installations
                                            ? .putInstallation(hub: "news", try HubStoreConformanceTests.installation(id))
                                            : .putRegistration(
                                                hub: "news", id: id,
                                                HubStoreConformanceTests.registration(hub: "news", id: id).registration,
                                                ifMatch: nil)
                                    )
                                    written += 1
                                } catch let refusal as WriteRefusal {
                                    #expect(refusal.reason == .conflict, "\(refusal)")
                                }
                            }
                            return written
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            let snapshot = try await stores[0].load()
            let stored =
                installations
                ? snapshot.installations.map(\.installation.installationId)
                : snapshot.registrations.compactMap(\.registration.registrationId)
            let folded = Dictionary(grouping: stored) { $0.lowercased() }.filter { $0.value.count > 1 }
            #expect(folded.isEmpty, "\(folded.count) ids are held twice, in two cases: \(folded.keys.sorted().prefix(5))")
            #expect(written == rounds)
            #expect(stored.count == rounds)
        }
    }
}

extension NodeOwnCommitsTests {
    /// PATCHes of one installation made on two nodes at once each add a tag: every tag
    /// stays. A node that patched the installation as its tables held it, behind another
    /// node's patch committed between, wrote over that patch and lost its tag.
    @Test func patchesOfOneInstallationOnTwoNodesAtOnceAreAllKept() async throws {
        try await Self.withTwoNodes { stores, engines in
            _ = try await engines[0].write(
                .putInstallation(hub: "news", try HubStoreConformanceTests.installation("shared", tags: ["first"])))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (n, engine) in engines.enumerated() {
                    for writer in 0..<3 {
                        group.addTask {
                            for round in 0..<6 {
                                _ = try await engine.write(
                                    .patchInstallation(hub: "news", id: "shared", [.add("/tags", "n\(n)w\(writer)r\(round)")]))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let stored = try await stores[1].load().installations.first { $0.installation.installationId == "shared" }
            let tags = Set(stored?.installation.tags ?? [])
            let lost = (0..<2).flatMap { n in (0..<3).flatMap { w in (0..<6).map { "n\(n)w\(w)r\($0)" } } }.filter {
                !tags.contains($0)
            }
            #expect(lost.isEmpty, "\(lost.count) of 36 tags were lost: \(lost.prefix(5))")
            #expect(tags.contains("first"))
            for engine in engines { #expect(Set(try await engine.installation(hub: "news", id: "shared")?.tags ?? []) == tags) }
        }
    }
}

extension NodeOwnCommitsTests {
    /// A send accepted on one node is planned for every installation acknowledged on any
    /// node before it. Thirty times: an installation with a tag of its own is acknowledged on
    /// one node, then at once a test send to that tag is accepted on the other, and its
    /// outcome names that one device. A node that planned before catching up through what
    /// its acceptance saw would find no device.
    @Test func aSendOnOneNodeReachesAnInstallationAcknowledgedOnAnotherJustBefore() async throws {
        try await Self.withTwoNodes(testSendLimit: 1000) { stores, engines in
            for k in 0..<30 {
                _ = try await engines[k % 2].write(
                    .putInstallation(hub: "news", try HubStoreConformanceTests.installation("rw-\(k)", tags: ["Tag\(k)"])))
                let other = engines[(k + 1) % 2]
                let outcome = try await other.enqueueTest(
                    StoredNotification(
                        hub: "news", id: other.makeNotificationId(), format: .template, tagExpression: "Tag\(k)",
                        body: #"{"messageParam":"hi"}"#, isTest: true))
                #expect(outcome.results.count == 1, "round \(k): \(outcome.results)")
            }
        }
    }
}

extension NodeOwnCommitsTests {
    /// Two nodes on one database, started and running while `body` runs.
    static func withTwoNodes(
        testSendLimit: Int = 10, _ body: ([PostgresHubStore], [HubEngine]) async throws -> Void
    ) async throws {
        let stores = try await SharedHubStoreTests.nodes(2)
        defer { for store in stores { store.shutdown() } }
        let engines = stores.map { store in
            HubEngine(store: store, configuration: .init(hubs: ["news"]) { $0.testSendLimit = testSendLimit })
        }
        for engine in engines { try await engine.start() }
        let running = engines.map { engine in Task { await engine.run() } }
        defer {
            for task in running { task.cancel() }
            for engine in engines { engine.stop() }
        }
        try await body(stores, engines)
    }
}
