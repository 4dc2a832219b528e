import Foundation
import PostgresNIO

/// Over the cap on PostgreSQL, the largest holders give first (`HolderEviction`), inside
/// retention's transaction and its lock: what each device holds of the compact log is summed
/// in the database, the level found here, and each giving device's oldest deliveries removed
/// with a running sum. Rows of the earlier form not yet copied (`delivery_v1`) are left to the
/// oldest-first cut that follows.
extension PostgresHubStore {
    func evictLargestHolders(maximum: Int64, on connection: PostgresConnection) async throws -> PruneReport {
        var report = PruneReport()
        for _ in 0..<HolderEviction.passes {
            guard let (bytes, count) = try await logTotals(on: connection) else { break }
            let excess = bytes + count * deliveryRowBytes - maximum
            guard excess > 0 else { break }
            var holdings: [Int64: Double] = [:]
            for try await (device, held) in try await connection.query(
                """
                WITH share AS (SELECT payload, COUNT(*) AS n FROM delivery GROUP BY payload)
                SELECT d.device, SUM(\(Double(deliveryRowBytes)) + length(p.body)::float8 / s.n)
                FROM delivery d JOIN share s ON s.payload = d.payload JOIN payload p ON p.id = d.payload
                GROUP BY d.device
                """, logger: logger
            ).decode((Int64, Double).self) {
                holdings[device] = held
            }
            let gives = HolderEviction.gives(holdings, excess: Double(excess)).sorted { $0.key < $1.key }
            guard !gives.isEmpty else { break }
            let removed = try await removeHeld(gives, on: connection)
            report.merge(removed)
            if removed.deliveries == 0 { break }
        }
        return report
    }

    /// Each device's oldest deliveries while what it gave is short of `gives`, each device's
    /// loss noted as its gap; then the payloads no delivery uses any more.
    private func removeHeld(_ gives: [(key: Int64, value: Double)], on connection: PostgresConnection) async throws
        -> PruneReport
    {
        var cuts: [(Int64, Int64)] = []
        for try await cut in try await connection.query(
            """
            WITH give AS (SELECT * FROM unnest(\(gives.map(\.key)), \(gives.map(\.value))) AS g(device, amount)),
            share AS (SELECT payload, COUNT(*) AS n FROM delivery GROUP BY payload),
            charged AS (
                SELECT d.seq, d.device, g.amount, \(Double(deliveryRowBytes)) + length(p.body)::float8 / s.n AS charge
                FROM delivery d JOIN give g ON g.device = d.device JOIN share s ON s.payload = d.payload
                    JOIN payload p ON p.id = d.payload),
            running AS (
                SELECT seq, device, amount, charge, SUM(charge) OVER (PARTITION BY device ORDER BY seq) AS upto FROM charged)
            SELECT device, MAX(seq) FROM running WHERE upto - charge < amount GROUP BY device ORDER BY device
            """, logger: logger
        ).decode((Int64, Int64).self) {
            cuts.append(cut)
        }
        var report = PruneReport()
        guard !cuts.isEmpty else { return report }
        let devices = cuts.map(\.0)
        let throughs = cuts.map(\.1)
        report.devices = try await connection.query(
            """
            INSERT INTO device_gap (hub, device, gap_from, gap_through, gap_count)
            SELECT r.hub, r.device, MIN(d.seq), MAX(d.seq), COUNT(*)
            FROM unnest(\(devices), \(throughs)) AS c(device, through)
                JOIN delivery d ON d.device = c.device AND d.seq <= c.through JOIN device_ref r ON r.id = c.device
            GROUP BY r.hub, r.device
            ON CONFLICT (hub, device) DO UPDATE SET gap_through = GREATEST(device_gap.gap_through, excluded.gap_through),
                gap_count = device_gap.gap_count + excluded.gap_count
            RETURNING device
            """, logger: logger
        ).collect().count
        var touched: [Int64] = []
        for try await payload in try await connection.query(
            """
            DELETE FROM delivery d USING unnest(\(devices), \(throughs)) AS c(device, through)
            WHERE d.device = c.device AND d.seq <= c.through
            RETURNING d.payload
            """, logger: logger
        ).decode(Int64.self) {
            touched.append(payload)
        }
        report.deliveries = touched.count
        let candidates = Array(Set(touched)).sorted()
        report.payloads = try await connection.query(
            """
            DELETE FROM payload p WHERE p.id = ANY(\(candidates))
                AND NOT EXISTS (SELECT 1 FROM delivery d WHERE d.seq BETWEEN p.first_seq AND p.last_seq AND d.payload = p.id)
            RETURNING p.id
            """, logger: logger
        ).collect().count
        return report
    }
}
