import Foundation
import GRDB
import NotificationHubs

/// Reading SQLite rows as data that may be hostile: SQLite keeps a value of any kind in any
/// column, and GRDB's row subscript stops the process on a value of another kind, so every
/// column the hub reads of a stored row goes through `stored`, which throws instead.
extension Row {
    /// The column's value, nil when NULL; a value of another kind is a reason to set the row aside.
    func stored<T: DatabaseValueConvertible>(_ column: String, as type: T.Type = T.self) throws(QuarantineReason) -> T? {
        do {
            return try decode(T?.self, forColumn: column)
        } catch {
            throw QuarantineReason(description: "its \(column) holds a value of another kind")
        }
    }

    /// The column's value, which the hub always writes.
    func required<T: DatabaseValueConvertible>(_ column: String, as type: T.Type = T.self) throws(QuarantineReason) -> T {
        guard let value = try stored(column, as: T.self) else {
            throw QuarantineReason(description: "its \(column) is missing")
        }
        return value
    }
}

extension SQLiteHubStore {
    /// A notification row decoded and checked (`StoredNotification.stored`).
    static func notification(from row: Row) throws(QuarantineReason) -> StoredNotification {
        try StoredNotification.stored(
            NotificationColumns(
                hub: try row.stored("hub"), id: try row.stored("id"), format: try row.stored("format"),
                tags: try row.stored("tags"), body: try row.stored("body"), headers: try row.stored("headers"),
                directHandle: try row.stored("direct_handle"), test: try row.stored("test"),
                enqueued: try row.stored("enqueued"), state: try row.stored("state"), started: try row.stored("started"),
                ended: try row.stored("ended"), outcome: try row.stored("outcome"), fireAt: try row.stored("fire_at"),
                directHandles: try row.stored("direct_handles"), report: try row.stored("report"),
                starts: try row.stored("starts")))
    }

    /// The notifications `sql` selects, decoded; rows that fail are moved to the quarantine
    /// in the same transaction (they would fail at every start), logged, and left out.
    func notifications(_ sql: String, arguments: StatementArguments = []) async throws -> [StoredNotification] {
        let read = try await pool.read { db in try Row.fetchAll(db, sql: sql, arguments: arguments) }
        var good: [StoredNotification] = []
        var bad: [(seq: Int64, reason: QuarantineReason)] = []
        for row in read {
            do {
                good.append(try Self.notification(from: row))
            } catch {
                // The row's key is SQLite's own integer (INTEGER PRIMARY KEY): always readable.
                if let seq: Int64 = try? row.stored("seq") { bad.append((seq, error)) }
            }
        }
        guard !bad.isEmpty else { return good }
        let (now, quarantined) = (Date().timeIntervalSince1970, bad)
        try await pool.write { db in
            for (seq, reason) in quarantined {
                try db.execute(
                    sql: """
                        INSERT INTO quarantine (kind, hub, id, body, reason, at)
                        SELECT 'notification', CAST(hub AS BLOB), CAST(id AS BLOB), CAST(body AS BLOB), ?, ?
                        FROM notification WHERE seq = ?
                        """, arguments: [reason.description, now, seq])
                try db.execute(sql: "DELETE FROM notification WHERE seq = ?", arguments: [seq])
            }
        }
        for (seq, reason) in bad { SkippedRows.shared.skip("notification row \(seq) (quarantined)", reason) }
        return good
    }

    /// The reservation (`delivery_counter.seq_reserved`): nil when the row is absent; one
    /// that is no number in range throws.
    static func reservedSequence(in db: Database) throws -> Int64? {
        guard let row = try Row.fetchOne(db, sql: "SELECT seq_reserved, CAST(seq_reserved AS TEXT) AS text FROM delivery_counter")
        else { return nil }
        guard let value = try? row.stored("seq_reserved", as: Int64.self), StoredRange.sequence.contains(value) else {
            let text = (try? row.stored("text", as: String.self)) ?? nil
            throw StoreFailure(
                description:
                    "the counter 'seq_reserved' holds '\((text ?? "a value that is no text").prefix(40))', not a number from 0 to 2^62",
                permanent: true)
        }
        return value
    }
}
