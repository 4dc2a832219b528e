import Foundation
import Logging
import NotificationHubs
import PostgresNIO
import Synchronization

extension PostgresHubStore {
    /// Of entries with one hub and id, the last; in order.
    static func latest(_ run: [(hub: String, installation: Installation)]) -> [(hub: String, installation: Installation)] {
        var latest: [String: Int] = [:]
        for (r, entry) in run.enumerated() { latest[entry.hub + "\u{0}" + entry.installation.installationId] = r }
        return latest.values.sorted().map { run[$0] }
    }

    /// A batch of installation upserts alone, in one call that commits before it answers: the
    /// counter's numbers, the rows, their entries in the change log and the wake-up.
    ///
    /// With a resolution, while no other node was seen writing for a second, first only if
    /// nothing was committed after its position (`PutAtHead`, checked on the counter's row
    /// under its lock); else, or when something was, with the full check under that lock
    /// (`put_installations`), which costs a node alone about a tenth of its ingest.
    func putInstallations(_ run: [(hub: String, installation: Installation)], resolvedAt resolution: Resolution?)
        async throws -> CommitOutcome
    {
        let latest = Self.latest(run)
        let (hubs, ids, json) = (
            latest.map(\.hub), latest.map(\.installation.installationId), latest.map(\.installation.json.text)
        )
        let (changeHubs, changeIds) = (run.map(\.hub), run.map(\.installation.installationId))
        let (count, wake) = (Int64(run.count), StoreWakeup.changes.payload(from: node))
        if let resolution, headMisses.triesHead() {
            let atHead = try await rows(
                PutAtHead(
                    hubs: hubs, ids: ids, json: json, count: count, changeHubs: changeHubs, changeIds: changeIds, wake: wake,
                    position: resolution.position))
            if let last = try atHead.first?["last"].decode(Int64?.self) { return .committed((last - count + 1)...last) }
            headMisses.missed()
        }
        let answer = try await rows(
            PutInstallations(
                hubs: hubs, ids: ids, json: json, changeHubs: changeHubs, changeIds: changeIds, wake: wake, resolution: resolution
            ))
        guard let last = try answer.first?["last"].decode(Int64?.self) else { return .moved }
        return .committed((last - count + 1)...last)
    }
}

/// When a batch of installation upserts last found changes after its position: other nodes
/// are writing, and for a while batches go straight to the full check.
final class HeadMisses: Sendable {
    /// When the last miss was; nil never.
    private let last = Mutex<ContinuousClock.Instant?>(nil)
    /// For how long after a miss a batch goes straight to the full check.
    static let window = Duration.seconds(1)

    /// Whether a batch tries the check at the head first: no miss within the window.
    func triesHead(now: ContinuousClock.Instant = .now) -> Bool {
        guard let missed = last.withLock({ $0 }) else { return true }
        return now > missed + Self.window
    }

    /// A batch found changes after its position.
    func missed(now: ContinuousClock.Instant = .now) { last.withLock { $0 = now } }
}

/// A batch of installation upserts alone (`put_installations`, migration v7, committed by
/// `commit_put_installations`, v9), prepared once per connection: the last change-log number
/// it took, or null when its resolution moved.
struct PutInstallations: PostgresPreparedStatement {
    static let sql = "CALL commit_put_installations($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULL)"

    let hubs: [String]
    let ids: [String]
    let json: [String]
    let changeHubs: [String]
    let changeIds: [String]
    let wake: String
    let resolution: Resolution?

    func makeBindings() throws -> PostgresBindings {
        var binds = PostgresHubStore.binds(hubs, ids, json, changeHubs, changeIds, wake)
        LockChangeCounter.bind(resolution, to: &binds)
        return binds
    }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRandomAccessRow { row.makeRandomAccess() }
}

/// A batch of installation upserts alone resolved at the head (`commit_put_at_head`,
/// migration v9): written only if nothing was committed after the position (checked on the
/// counter's row, under its lock).
struct PutAtHead: PostgresPreparedStatement {
    static let sql = "CALL commit_put_at_head($1, $2, $3, $4, $5, $6, $7, $8, NULL)"

    let hubs: [String]
    let ids: [String]
    let json: [String]
    let count: Int64
    let changeHubs: [String]
    let changeIds: [String]
    let wake: String
    let position: Int64

    func makeBindings() throws -> PostgresBindings {
        PostgresHubStore.binds(hubs, ids, json, count, changeHubs, changeIds, wake, position)
    }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRandomAccessRow { row.makeRandomAccess() }
}
