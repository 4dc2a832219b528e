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
    /// its gaps with `deliveries`) into `destination`; returns the file's info and what was
    /// copied. The file is read once, into a private copy (a regular file only), checked as
    /// `HubBackup.open` checks it, keys included, and stripped of everything but its tables
    /// (`HubBackup.strip`) before it is read as data; the destination is made by this version
    /// and written through its store, numbering on above the backup's highest delivery (in a
    /// new epoch all the same). A PostgreSQL database that holds a hub is refused unless
    /// `replacing`, which erases it first (its nodes stopped). Nothing is written before
    /// every check passed.
    public static func copy(backup file: URL, to destination: HubTransferDestination, deliveries: Bool, replacing: Bool)
        async throws -> (HubBackupInfo, HubBackupCounts)
    {
        try await HubBackup.withPrivateCopy(of: file) { snapshotFile in
            let (info, _) = try HubBackup.check(snapshotFile, shownAs: file.path)
            let keys = try HubBackup.checkedKeys(info, file: file)
            try HubBackup.strip(snapshotFile)
            let source = try SQLiteHubStore(path: snapshotFile.path)
            defer { try? source.close() }
            // Whichever says more, each read as data (a value out of range counts for nothing).
            // Past the headroom the new epoch numbers its log afresh, and the deliveries numbered
            // that high (written by hand) are left out: the restored hub can send.
            var highest = max(info.highestSequence, (try? await source.sequenceHighWater()) ?? 0)
            if highest >= StoredRange.restoreHeadroom { highest = 0 }
            let counts = try await write(
                source, to: destination, keys: LocalHubKeyFile.encode(keys), highest: highest, deliveries: deliveries,
                replacing: replacing)
            return (info, counts)
        }
    }

    /// Writes the hub `source` holds into `destination` with the key file's text `keyText`,
    /// its delivery numbers reserved through `highest`.
    private static func write(
        _ source: SQLiteHubStore, to destination: HubTransferDestination, keys keyText: String, highest: Int64,
        deliveries: Bool, replacing: Bool
    ) async throws -> HubBackupCounts {
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
            try await store.reserveSequence(through: highest)
            try await store.importKeys(keyText)
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
                    try await store.reserveSequence(through: highest)
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
                    Data(keyText.utf8), to: folder.appendingPathComponent(LocalHubKeyFile.fileName), permissions: 0o600)
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
        // A claim keeps its secret's digest: its terminal's streams open on the restored hub.
        mutations += snapshot.claimedDevices.map {
            .claimDevice(
                hub: $0.hub, device: $0.device, at: claimTimes[SQLiteHubStore.claimKey(hub: $0.hub, device: $0.device)] ?? now,
                secretDigest: $0.secretDigest)
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
            let kept = page.deliveries.filter { $0.seq < StoredRange.restoreHeadroom }
            counts.skipped += page.skipped + page.deliveries.count - kept.count
            counts.deliveries += kept.count
            try await target.importDeliveries(kept)
            after = through
        }
        try await target.importGaps(try await source.gaps().filter { $0.gap.through < StoredRange.restoreHeadroom })
        return counts
    }
}
