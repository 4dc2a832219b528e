import ArgumentParser
import BreakingNewsKit
import Foundation
import LocalHub
import LocalHubSupport
import Logging
import NewsCommandLine
import NotificationHubs

extension HubCommand {
    /// `breaking-news hub prune`: retention now, on the hub's own database (never over HTTP),
    /// and the space given back to the disk when asked.
    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove what the local hub keeps past its retention now; --vacuum gives the space back to the disk.",
            discussion: """
                Deliveries and ended notifications older than the retention go, then the oldest deliveries while the \
                log is over its size; a terminal that comes back after missing some is told how many. The retention \
                and size are the running hub's (hub serve --retention, --delivery-log-megabytes) unless given here. \
                Safe while the hub runs.
                """)

        @Option(help: ArgumentHelp("Keep this long (s, m, h, d); default: the running hub's, else 30d.", valueName: "duration"))
        var retention: HubDuration?

        @Option(
            name: .customLong("delivery-log-megabytes"),
            help: "The most the delivery log may keep; default: the running hub's, else 1024.")
        var deliveryLogMegabytes: Int?

        @Flag(help: "Give the freed space back to the disk (SQLite: incremental vacuum; PostgreSQL: VACUUM).")
        var vacuum = false

        @OptionGroup var place: HubPlace

        @Flag(help: "Print what was removed and what is kept as JSON.")
        var json = false

        func validate() throws {
            if let retention, retention.seconds < 10 { throw ValidationError("--retention must be at least 10s") }
            if let deliveryLogMegabytes, !(1...1_048_576).contains(deliveryLogMegabytes) {
                throw ValidationError("--delivery-log-megabytes must be 1 to 1048576")
            }
        }

        func run() async throws {
            let folder = place.folder
            let running = LocalHubState.read(folder.appendingPathComponent(LocalHubState.fileName))
            // A node's folder holds no database of its own: what it keeps is in the cluster's.
            if place.storeURL == nil, let node = running?.node {
                throw CommandFailure.usage(
                    "\(folder.path) is the folder of node \(node) of a cluster, whose deliveries are kept in its "
                        + "database: give --store URL (and --store-password-file FILE)")
            }
            let policy = RetentionPolicy(
                age: retention?.seconds ?? running?.retention ?? RetentionPolicy.standard.age,
                maximumLogBytes: deliveryLogMegabytes.map { Int64($0) << 20 } ?? running?.deliveryLogBytes
                    ?? RetentionPolicy.standard.maximumLogBytes,
                installationTTL: nil)
            let vacuum = vacuum
            let (report, usage) = try await HubStoreAccess.withStore(place) { store in
                do {
                    let report = try await store.prune(
                        before: Date().addingTimeInterval(-policy.age), maximumLogBytes: policy.maximumLogBytes)
                    if vacuum { try await store.compact() }
                    return (report, try await store.usage())
                } catch {
                    throw CommandFailure("pruning failed: \(error)", exitCode: .failure)
                }
            }
            if json {
                say(
                    JSONValue.object([
                        ("removed", Self.json(report)), ("kept", HubStoreAccess.json(usage, policy: policy)),
                    ]).text)
                return
            }
            let told = report.devices == 1 ? "1 device" : "\(report.devices) devices"
            say("removed \(report.deliveries) deliveries (\(told) will be told), \(report.notifications) notifications")
            say(HubStoreAccess.describe(usage, policy: policy))
        }

        static func json(_ report: PruneReport) -> JSONValue {
            .object([
                ("deliveries", .number(String(report.deliveries))), ("payloads", .number(String(report.payloads))),
                ("notifications", .number(String(report.notifications))), ("devices", .number(String(report.devices))),
            ])
        }
    }
}

/// The hub's database opened by a command, beside a running hub or not.
enum HubStoreAccess {
    /// `body` with the PostgreSQL database at `url` (`withPostgres`), else the SQLite
    /// database of `folder`.
    static func withStore<T>(_ place: HubPlace, _ body: (any HubStore) async throws -> T) async throws -> T {
        if let url = place.storeURL {
            return try await withPostgres(url, password: try place.storePassword(), purpose: "prune") { try await body($0) }
        }
        return try await body(try openSQLite(folder: place.folder))
    }

    /// The SQLite database of `folder`.
    static func openSQLite(folder: URL) throws -> SQLiteHubStore {
        let path = folder.appendingPathComponent("hub.sqlite").path
        guard FileManager.default.fileExists(atPath: path) else {
            throw CommandFailure("no hub database in \(folder.path) (the hub makes it on its first start)", exitCode: .failure)
        }
        do {
            return try SQLiteHubStore(path: path)
        } catch {
            throw CommandFailure("cannot open \(path): \(error)", exitCode: .failure)
        }
    }

    /// "database 12.3 MB (3.1 MB free); delivery log 2.0 MB of 1024 MB, 1,234 deliveries since …; keeps 30 days".
    static func describe(_ usage: StoreUsage, policy: RetentionPolicy) -> String {
        let oldest = usage.oldestDelivery.map { " since \(W3CDate.format($0).prefix(19))Z" } ?? ""
        return "database \(megabytes(usage.usedBytes)) used, \(megabytes(usage.fileBytes)) on disk; "
            + "delivery log \(megabytes(usage.deliveryLogBytes)) of \(policy.maximumLogBytes >> 20) MB, "
            + "\(usage.deliveries) deliveries\(oldest); \(usage.notifications) notifications; "
            + "keeps \(HubDuration(seconds: policy.age))"
    }

    static func json(_ usage: StoreUsage, policy: RetentionPolicy) -> JSONValue {
        .object(dropping: [
            ("usedBytes", .number(String(usage.usedBytes))), ("fileBytes", .number(String(usage.fileBytes))),
            ("deliveryLogBytes", .number(String(usage.deliveryLogBytes))),
            ("deliveries", .number(String(usage.deliveries))), ("notifications", .number(String(usage.notifications))),
            ("oldestDelivery", usage.oldestDelivery.map { .string(W3CDate.format($0)) }),
            ("retentionSeconds", .number(String(Int64(policy.age)))),
            ("deliveryLogLimitBytes", .number(String(policy.maximumLogBytes))),
        ])
    }

    static func megabytes(_ bytes: Int64) -> String {
        bytes < 1 << 20 ? "\((bytes + 1023) / 1024) KB" : String(format: "%.1f MB", Double(bytes) / 1_048_576)
    }
}
