import Foundation
import Logging
import NotificationHubs
import PostgresNIO

extension PostgresHubStore {
    /// Runs of installation upserts and of notification inserts (what registration and send
    /// bursts bring) are written one statement per run; the rest one statement each. A batch
    /// of one run alone is one call of a procedure that commits before it answers (migration
    /// v9): one round trip, where BEGIN, the statement and COMMIT took three.
    @discardableResult
    public func apply(_ mutations: [HubMutation]) async throws -> ClosedRange<Int64>? {
        guard case .committed(let numbers) = try await commit(mutations, resolvedAt: nil) else {
            throw StoreFailure(description: "a commit without a resolution came back as moved")
        }
        return numbers
    }

    public func apply(_ mutations: [HubMutation], resolvedAt resolution: Resolution) async throws -> CommitOutcome {
        try await commit(mutations, resolvedAt: resolution)
    }

    /// Every commit that logs changes locks the change log's counter before any row, so two
    /// commits never wait on each other in turn; a resolution is checked under that lock, by
    /// a statement after it (one that waited for the lock sees what its holder committed).
    /// A commit that logs no change (sends, scheduled sends fired or cancelled) writes nothing
    /// a resolution is about, and is not checked.
    private func commit(_ mutations: [HubMutation], resolvedAt resolution: Resolution?) async throws -> CommitOutcome {
        guard !mutations.isEmpty else { return .committed(nil) }
        let now = Date().timeIntervalSince1970
        let sends = mutations.compactMap { if case .insertNotification(let n) = $0 { n } else { nil } }
        if sends.count == mutations.count {
            // Sends read nothing a resolution names.
            _ = try await rows(insertion(sends, now: now, committing: true))
            return .committed(nil)
        }
        let puts = mutations.compactMap { if case .upsertInstallation(let hub, let i) = $0 { (hub, i) } else { nil } }
        if puts.count == mutations.count { return try await putInstallations(puts, resolvedAt: resolution) }
        let logsChanges = mutations.contains(where: \.logsChange)
        return try await transaction { connection in
            // The counter before any row, as every commit that logs changes takes them.
            if logsChanges {
                let count = Int64(mutations.count)
                guard try await self.lockCounter(checking: resolution, count: count, on: connection) else { return .moved }
            }
            var changes: [LoggedChange] = []
            var m = mutations.startIndex
            while m < mutations.endIndex {
                m = try await self.write(mutations, from: m, now: now, logging: &changes, on: connection)
            }
            return .committed(try await self.appendChanges(changes, on: connection))
        }
    }

    /// Locks the change log's counter, checking the batch's resolution by the rule every batch
    /// is committed by (`lock_change_counter`), in one statement. False when it moved.
    private func lockCounter(checking resolution: Resolution?, count: Int64, on connection: PostgresConnection)
        async throws -> Bool
    {
        let locked = try await connection.execute(LockChangeCounter(resolution), logger: logger)
            .reduce(into: []) { $0.append($1) }.first
        guard let locked else { throw Self.noNumbers(count) }
        return try locked["moved"].decode(Bool.self) == false
    }

    /// A commit that took no numbers for its changes: the counter is missing (a database
    /// this version did not migrate).
    static func noNumbers(_ count: Int64) -> StoreFailure {
        StoreFailure(description: "the change log took no numbers for \(count) changes")
    }

    /// Numbers the changes after the last one committed and writes them, and wakes the other
    /// nodes (the notification goes out at commit); returns the numbers they took. The
    /// numbers come from a counter row (`change_counter`), last in the transaction: its
    /// lock, held to the commit, makes the next commit wait for this one, so numbers become
    /// visible in the order they are taken, with none left out.
    func appendChanges(_ changes: [LoggedChange], on connection: PostgresConnection)
        async throws -> ClosedRange<Int64>?
    {
        guard !changes.isEmpty else { return nil }
        let count = Int64(changes.count)
        let last = try await connection.query(
            """
            WITH numbered AS (
                UPDATE change_counter SET change_seq = change_seq + \(count) RETURNING change_seq AS last),
            added AS (
                INSERT INTO change (seq, kind, hub, id)
                SELECT numbered.last - \(count) + c.n, c.k, c.h, c.i
                FROM numbered, unnest(\(changes.map(\.kind.code)), \(changes.map(\.hub)), \(changes.map(\.id))) WITH ORDINALITY AS c(k, h, i, n))
            SELECT last, pg_notify('hub_wake', \(StoreWakeup.changes.payload(from: self.node))) FROM numbered
            """, logger: self.logger
        ).collect().first?.makeRandomAccess()["last"].decode(Int64.self)
        guard let last else { throw Self.noNumbers(count) }
        return (last - count + 1)...last
    }
}

/// The change log's counter locked for a batch, its resolution checked (`lock_change_counter`),
/// prepared once per connection: the counter's value and whether the resolution moved.
struct LockChangeCounter: PostgresPreparedStatement {
    static let sql = "SELECT head, moved FROM lock_change_counter($1, $2, $3, $4, $5, $6)"

    let resolution: Resolution?

    init(_ resolution: Resolution?) { self.resolution = resolution }

    /// A resolution's position and room (null without one), and the records it read.
    static func bind(_ resolution: Resolution?, to binds: inout PostgresBindings) {
        if let resolution {
            binds.append(resolution.position)
            binds.append(resolution.room)
        } else {
            binds.appendNull()
            binds.appendNull()
        }
        let reads = resolution?.reads ?? []
        binds.append(reads.map(\.kind.code))
        binds.append(reads.map(\.hub))
        binds.append(reads.map(\.id))
        binds.append(reads.map(\.exact))
    }

    func makeBindings() throws -> PostgresBindings {
        var binds = PostgresBindings(capacity: 6)
        Self.bind(resolution, to: &binds)
        return binds
    }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRandomAccessRow { row.makeRandomAccess() }
}
