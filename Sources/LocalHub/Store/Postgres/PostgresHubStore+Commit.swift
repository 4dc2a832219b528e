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

    /// Locks the change log's counter; with a resolution, checks it against what is committed
    /// first, outside the lock, then, in it, against what was committed since (as
    /// `put_installations` does). False when the resolution moved.
    private func lockCounter(checking resolution: Resolution?, count: Int64, on connection: PostgresConnection)
        async throws -> Bool
    {
        var seen: Int64?
        if let resolution {
            guard
                let checked = try await connection.execute(ChangedSince(resolution, seen: nil), logger: logger)
                    .reduce(into: [], { $0.append($1) }).first
            else { throw Self.noNumbers(count) }
            guard try checked["moved"].decode(Bool?.self) == false else { return false }
            seen = try checked["seen"].decode(Int64?.self)
        }
        let head = try await connection.query(
            "SELECT change_seq FROM change_counter FOR UPDATE", logger: logger
        ).collect().first?.decode(Int64.self)
        guard let resolution, let seen else { return true }
        guard let head else { throw Self.noNumbers(count) }
        guard head > seen else { return true }
        let checked = try await connection.execute(ChangedSince(resolution, seen: seen), logger: logger)
            .reduce(into: []) { $0.append($1) }.first
        return try checked?["moved"].decode(Bool?.self) == false
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

/// Whether a change after a resolution's position names a record its batch read in a way
/// that would have resolved it otherwise, or more changes came after it than its room
/// (`changed_since`, migration v7): through the counter's value as the statement sees it
/// (`seen` nil), or from `seen` through that value (the changes committed since, read once
/// the counter is locked). Answers the value too.
struct ChangedSince: PostgresPreparedStatement {
    static let sql = """
        SELECT v.head AS seen, v.head - $1 > $2
            OR (v.head > COALESCE($3, $1) AND changed_since(COALESCE($3, $1), v.head, $4, $5, $6, $7)) AS moved
        FROM (SELECT change_seq AS head FROM change_counter) v
        """

    let resolution: Resolution
    let seen: Int64?

    init(_ resolution: Resolution, seen: Int64?) { (self.resolution, self.seen) = (resolution, seen) }

    static func bind(_ reads: [Resolution.Read], to binds: inout PostgresBindings) {
        binds.append(reads.map(\.kind.code))
        binds.append(reads.map(\.hub))
        binds.append(reads.map(\.id))
        binds.append(reads.map(\.exact))
    }

    func makeBindings() throws -> PostgresBindings {
        var binds = PostgresHubStore.binds(resolution.position, resolution.room)
        if let seen { binds.append(seen) } else { binds.appendNull() }
        Self.bind(resolution.reads, to: &binds)
        return binds
    }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRandomAccessRow { row.makeRandomAccess() }
}
