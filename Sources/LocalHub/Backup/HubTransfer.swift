import Foundation
import GRDB
import LocalHubSupport
import NotificationHubs

/// Where a move writes a hub.
public enum HubTransferDestination: Sendable {
    /// A new SQLite hub database at this path, its keys beside it in `keys.json`: named
    /// `DIR/hub.sqlite`, it makes DIR a hub's data folder.
    case sqlite(URL)
    /// A PostgreSQL database that nodes then serve.
    case postgres(PostgresHubStore)
}

/// A move the destination refused before anything was written.
public struct HubTransferRefusal: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// What the destination stores of a move write with: their own write paths (`apply`,
/// `record`), and the delivery log with its numbers.
protocol HubImportTarget: HubStore {
    func importDeliveries(_ deliveries: [Delivery]) async throws
    func importGaps(_ gaps: [(hub: String, device: String, gap: DeliveryGap)]) async throws
}

extension SQLiteHubStore: HubImportTarget {}
extension PostgresHubStore: HubImportTarget {}

/// Moves a hub from a backup file into another store: a PostgreSQL database that nodes
/// serve, or a new SQLite database (the way back). A move from a running hub backs it up
/// first (`HubBackup`), so what moves is one consistent snapshot.
///
/// Everything goes through the stores' own reads and writes: installations and
/// registrations are read with `load`, so each is checked as a hub checks what it loads (one
/// that fails is left out and counted), and written with `apply`, as a request's are;
/// notifications are checked as a node checks a row it reads. The destination's delivery
/// log begins a new epoch (a new database makes one), so receivers resume from its start and
/// dedupe.
public enum HubTransfer {
    /// Copies the hub of backup `file` (installations, registrations, claims, every
    /// notification with the scheduled and unfinished ones, the keys; the delivery log and
    /// its gaps with `deliveries`) into `destination`. A PostgreSQL database that holds a hub
    /// is refused unless `replacing`, which erases it first (its nodes stopped).
    public static func copy(backup file: URL, to destination: HubTransferDestination, deliveries: Bool, replacing: Bool)
        async throws -> HubBackupCounts
    {
        let (info, _) = try HubBackup.open(file)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("hub-move-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: scratch, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: scratch) }
        let snapshotFile = scratch.appendingPathComponent("snapshot.sqlite")
        try HubBackup.copyPrivately(file, to: snapshotFile)
        let source = try SQLiteHubStore(path: snapshotFile.path)
        defer { try? source.close() }

        switch destination {
        case .postgres(let store):
            if try await store.holdsHub() {
                guard replacing else {
                    throw HubTransferRefusal(
                        description:
                            "the database holds a hub already (installations, sends or keys); give --force to replace it, "
                            + "its nodes stopped")
                }
                try await store.erase()
            }
            let counts = try await copy(from: source, to: store, deliveries: deliveries)
            try await store.importKeys(info.keys)
            return counts
        case .sqlite(let url):
            let folder = url.deletingLastPathComponent()
            let temporary = folder.appendingPathComponent(
                ".\(url.lastPathComponent).\(ProcessInfo.processInfo.processIdentifier).tmp")
            func clean() {
                for suffix in ["", "-wal", "-shm", "-journal"] {
                    try? FileManager.default.removeItem(atPath: temporary.path + suffix)
                }
            }
            clean()
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            guard
                FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600])
            else {
                throw HubTransferRefusal(description: "cannot write in \(folder.path): \(String(cString: strerror(errno)))")
            }
            do {
                let store = try SQLiteHubStore(path: temporary.path)
                let counts: HubBackupCounts
                do {
                    counts = try await copy(from: source, to: store, deliveries: deliveries)
                    try store.close()
                } catch {
                    try? store.close()
                    throw error
                }
                let queue = try DatabaseQueue(path: temporary.path)
                try await queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = DELETE") }
                try queue.close()
                try HubBackup.sync(temporary)
                for suffix in ["-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
                guard rename(temporary.path, url.path) == 0 else {
                    throw HubTransferRefusal(description: "cannot write \(url.path): \(String(cString: strerror(errno)))")
                }
                try AtomicFile.write(
                    Data(info.keys.utf8), to: folder.appendingPathComponent(LocalHubKeyFile.fileName), permissions: 0o600)
                return counts
            } catch {
                clean()
                throw error
            }
        }
    }

    /// Copies what `source` holds into `target` through the target's writes.
    static func copy(from source: SQLiteHubStore, to target: some HubImportTarget, deliveries: Bool) async throws
        -> HubBackupCounts
    {
        var counts = HubBackupCounts()
        let snapshot = try await source.load()
        counts.skipped += snapshot.quarantined.count
        counts.installations = snapshot.installations.count
        counts.registrations = snapshot.registrations.count
        counts.claims = snapshot.claimedDevices.count
        let claimTimes = try await source.claimTimes()
        let now = Date()
        var mutations: [HubMutation] = []
        mutations += snapshot.installations.map { .upsertInstallation(hub: $0.hub, $0.installation) }
        mutations += snapshot.registrations.map { .upsertRegistration($0) }
        mutations += snapshot.claimedDevices.map {
            .claimDevice(
                hub: $0.hub, device: $0.device, at: claimTimes[SQLiteHubStore.claimKey(hub: $0.hub, device: $0.device)] ?? now)
        }
        for start in stride(from: 0, to: mutations.count, by: 500) {
            try await target.apply(Array(mutations[start..<min(start + 500, mutations.count)]))
        }

        var after: Int64 = 0
        while true {
            let page = try await source.notificationPage(after: after, limit: 500)
            guard let through = page.through else { break }
            counts.skipped += page.skipped
            counts.notifications += page.notifications.count
            counts.scheduled += page.notifications.filter { $0.state == .scheduled }.count
            try await target.apply(page.notifications.map { .insertNotification($0) })
            // The first devices' outcomes of a send, which an insert does not carry.
            let reports = page.notifications.filter { !$0.report.isEmpty }
            _ = try await target.record(reports.map { DispatchRecord(notification: $0, deliveries: []) })
            after = through
        }

        guard deliveries else { return counts }
        after = 0
        while true {
            let page = try await source.deliveryPage(after: after, limit: 2000)
            guard let through = page.through else { break }
            counts.skipped += page.skipped
            counts.deliveries += page.deliveries.count
            try await target.importDeliveries(page.deliveries)
            after = through
        }
        try await target.importGaps(try await source.gaps())
        return counts
    }
}
