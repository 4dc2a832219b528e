import Foundation
import Logging
import NotificationHubs
import PostgresNIO

extension PostgresHubStore {
    /// Inserts a run of notifications in one statement, claimed by this node (migration v9):
    /// `committing`, in a call that commits before it answers, outside any transaction (a
    /// batch of sends alone); else in the caller's transaction. Absent values travel as a
    /// flag beside an empty text, or as NaN for times.
    func insertion(_ run: [StoredNotification], now: Double, committing: Bool) -> PostgresQuery {
        func time(_ date: Date?) -> Double { date?.timeIntervalSince1970 ?? .nan }
        let handles = run.map { n in n.batchHandles.map { JSONValue.array($0.map(JSONValue.string)).text } }
        var binds = Self.binds(
            run.map(\.hub), run.map(\.id), run.map(\.format.rawValue), run.map { $0.tagExpression ?? "" },
            run.map { $0.tagExpression == nil }, run.map(\.body), run.map { StoredCodec.encode($0.headers) },
            run.map { $0.directHandle ?? "" }, run.map { $0.directHandle == nil }, run.map(\.isTest),
            run.map(\.enqueued.timeIntervalSince1970), run.map(\.state.rawValue), run.map { time($0.started) },
            run.map { time($0.ended) }, run.map { StoredCodec.encode($0.outcomeCounts.mapValues(String.init)) },
            run.map { time($0.scheduledFor) }, handles.map { $0 ?? "" }, handles.map { $0 == nil })
        binds.append(node)
        binds.append(now + Self.leaseSeconds)
        let arguments = (1...20).map { "$\($0)" }.joined(separator: ", ")
        return PostgresQuery(
            unsafeSQL: committing ? "CALL commit_notifications(\(arguments))" : "SELECT insert_notifications(\(arguments))",
            binds: binds)
    }

    /// A batch of dispatches, deliveries and final states, in one call of `record_dispatches`
    /// (migration v8) that commits before it answers (`commit_dispatches`, v9), as every batch
    /// does: deliveries of a commit that failed would otherwise reach the streams under
    /// numbers the next dispatch takes.
    public func record(_ dispatches: [DispatchRecord]) async throws -> [Delivery] {
        guard !dispatches.isEmpty else { return [] }
        return try await record(dispatches.flatMap(\.deliveries), states: dispatches.map(\.notification))
    }

    /// Writes deliveries under the deliveries lock and the notifications' `states`; returns
    /// the deliveries written, numbered. Numbered ones are skipped when their number is taken;
    /// unnumbered ones are numbered after the highest number yet, and skipped when the device
    /// already has that notification from that template (a dispatch another node repeated).
    func record(_ deliveries: [Delivery], states: [StoredNotification]) async throws -> [Delivery] {
        let reports = states.map { StoredCodec.encode($0.report) }
        let query: PostgresQuery = """
            CALL commit_dispatches(
                \(deliveries.map(\.seq)), \(deliveries.map(\.hub)), \(deliveries.map(\.device)),
                \(deliveries.map(\.notificationId)), \(deliveries.map(\.template)), \(deliveries.map(\.payload)),
                \(deliveries.map { $0.delivered.timeIntervalSince1970 }), \(deliveries.map { $0.tags ?? "" }),
                \(deliveries.map { $0.tags == nil }),
                \(states.map(\.id)), \(states.map(\.state.rawValue)),
                \(states.map { $0.started?.timeIntervalSince1970 ?? .nan }), \(states.map { $0.ended?.timeIntervalSince1970 ?? .nan }),
                \(states.map { StoredCodec.encode($0.outcomeCounts.mapValues(String.init)) }),
                \(reports.map { $0 ?? "" }), \(reports.map { $0 == nil }), \(StoreWakeup.deliveries.payload(from: self.node)),
                NULL, NULL)
            """
        guard let answer = try await rows(query).first else {
            throw StoreFailure(description: "recording deliveries gave no answer")
        }
        let high = try answer["high"].decode(Int64.self)
        let skipped = Set(try answer["skipped"].decode([Int64].self))
        var next = high
        var written: [Delivery] = []
        for (position, var delivery) in deliveries.enumerated() {
            if delivery.seq == 0 {
                next += 1
                delivery.seq = next
            }
            if !skipped.contains(Int64(position + 1)) { written.append(delivery) }
        }
        return written
    }

    /// A notification row decoded and checked (`StoredNotification.stored`).
    static func notification(from row: PostgresRandomAccessRow) throws -> StoredNotification {
        func value<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T? where T._DecodableType == T {
            guard row.contains(column) else { return nil }
            return try row[column].decode(T?.self)
        }
        return try StoredNotification.stored(
            NotificationColumns(
                hub: try value("hub"), id: try value("id"), format: try value("format"), tags: try value("tags"),
                body: try value("body"), headers: try value("headers"), directHandle: try value("direct_handle"),
                test: try value("test"), enqueued: try value("enqueued"), state: try value("state"),
                started: try value("started"), ended: try value("ended"), outcome: try value("outcome"),
                fireAt: try value("fire_at"), directHandles: try value("direct_handles"), report: try value("report"),
                starts: try value("starts", as: Int32.self).map(Int64.init)))
    }

    /// A notification row, or nil (logged once) when it is not one a node could have written.
    func checkedNotification(_ row: PostgresRandomAccessRow) -> StoredNotification? {
        let id = (try? row["id"].decode(String.self)) ?? "?"
        do {
            return try Self.notification(from: row)
        } catch let reason as QuarantineReason {
            SkippedRows.shared.skip("notification \(id)", reason, logger: logger)
        } catch {
            SkippedRows.shared.skip("notification \(id)", QuarantineReason(description: "\(error)"), logger: logger)
        }
        return nil
    }

    public func unfinishedNotifications() async throws -> [StoredNotification] {
        try await dispatchable(
            try await rows("SELECT * FROM notification WHERE state IN ('Enqueued', 'Processing') ORDER BY seq"))
    }

    public func scheduledNotifications() async throws -> [StoredNotification] {
        try await dispatchable(try await rows("SELECT * FROM notification WHERE state = 'Scheduled' ORDER BY fire_at"))
    }

    /// Rows read to be dispatched, decoded; one that fails is moved to the quarantine (it would
    /// fail at every start and every claim) and left out.
    func dispatchable(_ rows: [PostgresRandomAccessRow]) async throws -> [StoredNotification] {
        var good: [StoredNotification] = []
        var bad: [(seq: Int64, reason: String)] = []
        for row in rows {
            do {
                good.append(try Self.notification(from: row))
            } catch {
                if let seq = try? row["seq"].decode(Int64.self) { bad.append((seq, "\(error)")) }
            }
        }
        guard !bad.isEmpty else { return good }
        _ = try await written(
            """
            WITH moved AS (
                DELETE FROM notification n USING unnest(\(bad.map(\.seq)), \(bad.map(\.reason))) AS b(s, r)
                WHERE n.seq = b.s RETURNING n.hub, n.id, n.body, b.r)
            INSERT INTO quarantine (kind, hub, id, body, reason, at)
            SELECT 'notification', convert_to(hub, 'UTF8'), convert_to(id, 'UTF8'), convert_to(body, 'UTF8'), r,
                \(Date().timeIntervalSince1970)
            FROM moved RETURNING seq
            """)
        for (seq, reason) in bad {
            SkippedRows.shared.skip(
                "notification row \(seq) (quarantined)", QuarantineReason(description: reason), logger: logger)
        }
        return good
    }

    public func notification(hub: String, id: String) async throws -> StoredNotification? {
        try await rows("SELECT * FROM notification WHERE hub = \(hub) AND id = \(id)").first.flatMap(checkedNotification)
    }
}
