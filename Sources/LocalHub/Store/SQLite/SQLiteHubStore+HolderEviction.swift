import Foundation
import GRDB

/// Over the cap on SQLite, the largest holders give first (`HolderEviction`): what each
/// device holds is measured in a read, then each giving device's oldest deliveries are
/// removed in steps. Deliveries are only ever added above the numbers measured, and only
/// retention removes them, so what the read planned still holds when the steps run.
extension SQLiteHubStore {
    /// What one pass removes: each device's deliveries through a number, and the payloads
    /// that none will use after (unless a delivery numbered after `measured` uses them).
    struct HolderCuts {
        var cuts: [(device: Int64, through: Int64)] = []
        var emptied: [Int64] = []
        var measured: Int64 = 0
    }

    /// Devices whose deliveries are removed in one transaction.
    static let holderStep = 1000

    /// Passes of measuring and removing while the log is over `maximum` bytes.
    func evictLargestHolders(maximum: Int64) async throws -> PruneReport {
        var report = PruneReport()
        for _ in 0..<HolderEviction.passes {
            guard let plan = try await pool.read({ db in try Self.holderCuts(maximum, in: db) }) else { break }
            let removed = try await removeHeld(plan)
            report.merge(removed)
            if removed.deliveries == 0 { break }
        }
        return report
    }

    /// What the largest holders give for the log to fit `maximum`; nil when it fits.
    private static func holderCuts(_ maximum: Int64, in db: Database) throws -> HolderCuts? {
        let excess = try Self.excess(over: maximum, in: db)
        guard excess > 0 else { return nil }
        var plan = HolderCuts(
            measured: StoredRange.clamped(try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(seq), 0) FROM delivery") ?? 0))
        // Stored values are data: cast to numbers in the query, so nothing here traps.
        let pairs = "SELECT COALESCE(CAST(device AS INTEGER), 0), COALESCE(CAST(payload AS INTEGER), 0) FROM delivery"
        var sizes: [Int64: Int64] = [:]
        let payloads = try Row.fetchCursor(db, sql: "SELECT id, COALESCE(length(body), 0) FROM payload")
        while let row = try payloads.next() { sizes[row[0]] = row[1] }
        var sharing: [Int64: Int64] = [:]
        let shared = try Row.fetchCursor(db, sql: pairs)
        while let row = try shared.next() { sharing[row[1], default: 0] += 1 }
        var holdings: [Int64: Double] = [:]
        let held = try Row.fetchCursor(db, sql: pairs)
        while let row = try held.next() {
            let payload: Int64 = row[1]
            holdings[row[0], default: 0] += HolderEviction.charge(
                payloadBytes: sizes[payload] ?? 0, sharing: sharing[payload] ?? 1)
        }
        let gives = HolderEviction.gives(holdings, excess: Double(excess))
        var taken: [Int64: Int64] = [:]
        let oldest = try db.cachedStatement(
            sql: "SELECT seq, COALESCE(CAST(payload AS INTEGER), 0) FROM delivery WHERE device = ? AND seq <= ? ORDER BY seq")
        for (device, give) in gives.sorted(by: { $0.key < $1.key }) {
            var given = 0.0
            var through: Int64?
            let deliveries = try Row.fetchCursor(oldest, arguments: [device, plan.measured])
            while given < give, let row = try deliveries.next() {
                let payload: Int64 = row[1]
                given += HolderEviction.charge(payloadBytes: sizes[payload] ?? 0, sharing: sharing[payload] ?? 1)
                through = StoredRange.clamped(row[0])
                taken[payload, default: 0] += 1
            }
            if let through { plan.cuts.append((device, through)) }
        }
        plan.emptied = taken.filter { $0.value >= (sharing[$0.key] ?? 0) }.map(\.key).sorted()
        return plan
    }

    /// The planned deliveries removed, `holderStep` devices a transaction, each device's loss
    /// noted as its gap; then the payloads nothing uses any more.
    private func removeHeld(_ plan: HolderCuts) async throws -> PruneReport {
        var report = PruneReport()
        var start = 0
        while start < plan.cuts.count {
            let step = plan.cuts[start..<min(plan.cuts.count, start + Self.holderStep)]
            start += step.count
            let removed = try await pool.write { db -> PruneReport in
                var report = PruneReport()
                let gap = try db.cachedStatement(
                    sql: """
                        UPDATE device_ref SET gap_from = COALESCE(gap_from, g.first),
                            gap_through = MAX(COALESCE(gap_through, 0), g.last), gap_count = gap_count + g.n
                        FROM (SELECT MIN(seq) AS first, MAX(seq) AS last, COUNT(*) AS n FROM delivery
                            WHERE device = ?1 AND seq <= ?2) AS g
                        WHERE device_ref.id = ?1 AND g.n > 0
                        """)
                let delete = try db.cachedStatement(sql: "DELETE FROM delivery WHERE device = ? AND seq <= ?")
                for (device, through) in step {
                    try gap.execute(arguments: [device, through])
                    report.devices += db.changesCount
                    try delete.execute(arguments: [device, through])
                    report.deliveries += db.changesCount
                }
                return report
            }
            report.merge(removed)
        }
        guard !plan.emptied.isEmpty else { return report }
        report.payloads = try await pool.write { db in
            let since = try Int64.fetchSet(
                db, sql: "SELECT DISTINCT COALESCE(CAST(payload AS INTEGER), 0) FROM delivery WHERE seq > ?",
                arguments: [plan.measured])
            let delete = try db.cachedStatement(sql: "DELETE FROM payload WHERE id = ?")
            var removed = 0
            for id in plan.emptied where !since.contains(id) {
                try delete.execute(arguments: [id])
                removed += db.changesCount
            }
            return removed
        }
        return report
    }
}
