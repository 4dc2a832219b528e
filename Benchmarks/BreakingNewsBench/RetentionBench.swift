import Foundation
import HubTestSupport
import LocalHub
import LocalHubSupport
import NotificationHubs

// What the hub keeps costs (issue 30): bytes per delivery, all included, through a real hub;
// pruning a million deliveries; starting a hub that holds a million.

/// Bytes the database grows by per delivery: `sends` template sends of a ~100-byte message
/// to 100 devices through a hub process (`arguments` picks its store), everything it writes
/// counted (deliveries, payloads, notifications and their reports).
func bytesPerDelivery(
    binary: String, directory: URL, arguments: [String] = [], used: @escaping (BenchHub) async throws -> Int64
) async throws -> Double {
    let hub = try await BenchHub.start(binary: binary, directory: directory, arguments: arguments)
    defer { hub.stop() }
    try await register(hub: hub, tag: "Kept", first: 0, count: 100)
    let client = HubClient(connectionString: hub.full, hub: "breakingnews", retryPolicy: .none)
    let message = String(repeating: "x", count: 100 - #"{"aps":{"alert":""}}"#.count)
    // One send first, so that what is made once (tables, indexes' first pages) is not counted.
    _ = try await settled(client, try await client.send(.template(["messageParam": message]), tagExpression: "Kept"))
    let before = try await used(hub)
    let sends = 200
    var last: SendReceipt?
    for _ in 0..<sends { last = try await client.send(.template(["messageParam": message]), tagExpression: "Kept") }
    _ = try await settled(client, last!)
    // The dispatcher works in order: once the last is done, every one is.
    try await Task.sleep(for: .milliseconds(500))
    let after = try await used(hub)
    return Double(after - before) / Double(sends * 100)
}

/// Waits until a send is dispatched.
func settled(_ client: HubClient, _ receipt: SendReceipt) async throws -> NotificationDetails {
    let id = receipt.notificationId!
    for _ in 0..<3000 {
        let details = try await client.notificationDetails(id: id)
        if [.completed, .noTargetFound].contains(details.state) { return details }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw BenchError(description: "the send \(id) was not dispatched within a minute")
}

/// A million deliveries (10,000 sends to 100 devices) written into a hub's SQLite database,
/// numbered after `after`.
func fillMillion(_ store: SQLiteHubStore, delivered: Date, after: Int64 = 0) async throws {
    let devices = (0..<100).map { String(format: "%064x", $0) }
    let payload = #"{"aps":{"alert":"\#(String(repeating: "x", count: 80))"}}"#
    var seq = after
    try await store.reserveSequence(through: after + 1_000_000)
    for batch in 0..<100 {
        var notifications: [StoredNotification] = []
        for i in 0..<100 {
            var n = StoredNotification(
                hub: "breakingnews", id: "m\(after)-\(batch)-\(i)", format: .template, tagExpression: "World",
                body: #"{"messageParam":"\#(String(repeating: "x", count: 80))"}"#)
            n.enqueued = delivered
            notifications.append(n)
        }
        try await store.apply(notifications.map { .insertNotification($0) })
        let records = notifications.map { notification -> DispatchRecord in
            var done = notification
            done.state = .completed
            done.ended = delivered
            done.outcomeCounts = ["apns|Success": 100]
            let deliveries = devices.map { device -> Delivery in
                seq += 1
                return Delivery(
                    seq: seq, hub: "breakingnews", device: device, notificationId: notification.id,
                    template: "simpleAPNSTemplate", payload: payload, delivered: delivered, tags: "World")
            }
            return DispatchRecord(notification: done, deliveries: deliveries)
        }
        _ = try await store.record(records)
    }
}

func retentionBench(binary: String, postgres: Bool) async throws -> [BenchRow] {
    var rows: [BenchRow] = []
    let sqlite = output.appendingPathComponent("retention-sqlite")
    let perDelivery = try await bytesPerDelivery(binary: binary, directory: sqlite) { _ in
        try await SQLiteHubStore(path: sqlite.appendingPathComponent("hub.sqlite").path).usage().usedBytes
    }
    log("retention: \(String(format: "%.1f", perDelivery)) bytes per delivery on SQLite")
    rows.append(
        BenchRow(
            scenario: "bytes per delivery, SQLite (100-byte message to 100 devices, all included)", value: perDelivery,
            unit: "bytes", target: "<= 120", met: perDelivery <= 120))
    if postgres {
        // A server of its own, stopped when measured (the shared one of the tests is stopped
        // by their runner, which the bench has not).
        let onPostgres = try await PostgresServer.with { server in
            let url = try await server.createDatabase()
            let directory = output.appendingPathComponent("retention-postgres")
            let size = { (_: BenchHub) async throws -> Int64 in
                let text = try await server.psql("SELECT pg_database_size(current_database())", database: url)
                return Int64(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            }
            return try await bytesPerDelivery(binary: binary, directory: directory, arguments: ["--store", url], used: size)
        }
        log("retention: \(String(format: "%.1f", onPostgres)) bytes per delivery on PostgreSQL")
        rows.append(
            BenchRow(
                scenario: "bytes per delivery, PostgreSQL (as above)", value: onPostgres, unit: "bytes",
                target: "<= 150", met: onPostgres <= 150))
    }

    // A hub holding a million deliveries: how long it takes to start, and to prune them.
    let million = output.appendingPathComponent("retention-million")
    try? FileManager.default.removeItem(at: million)
    try FileManager.default.createDirectory(at: million, withIntermediateDirectories: true)
    let path = million.appendingPathComponent("hub.sqlite").path
    let filling = ContinuousClock.now
    try await fillMillion(try SQLiteHubStore(path: path), delivered: Date().addingTimeInterval(-86_400))
    log("retention: a million deliveries written in \(String(format: "%.1f", (ContinuousClock.now - filling).seconds)) s")
    let start = ContinuousClock.now
    let hub = try await BenchHub.start(binary: binary, directory: million, keepingData: true)
    let started = (ContinuousClock.now - start).seconds
    hub.stop()
    log("retention: a hub holding a million deliveries answered in \(String(format: "%.2f", started)) s")
    rows.append(
        BenchRow(
            scenario: "start with a million deliveries kept (SQLite)", value: started * 1000, unit: "ms", target: "< 5000",
            met: started < 5))
    let store = try SQLiteHubStore(path: path)
    let pruning = ContinuousClock.now
    let report = try await store.prune(before: Date(), maximumLogBytes: 1 << 30)
    let pruned = (ContinuousClock.now - pruning).seconds
    guard report.deliveries == 1_000_000 else {
        throw BenchError(description: "pruning removed \(report.deliveries) deliveries, not a million")
    }
    log("retention: a million deliveries pruned in \(String(format: "%.2f", pruned)) s")
    rows.append(
        BenchRow(
            scenario: "prune a million deliveries (SQLite)", value: pruned * 1000, unit: "ms", target: "< 10000",
            met: pruned < 10))
    // Over the cap instead of past the age: what the devices hold measured, and each of the
    // hundred gives its oldest half (issue 49).
    try await fillMillion(store, delivered: Date(), after: 1_000_000)
    let full = try await store.usage().deliveryLogBytes
    let capping = ContinuousClock.now
    let capped = try await store.prune(before: Date().addingTimeInterval(-86_400), maximumLogBytes: full / 2)
    let cut = (ContinuousClock.now - capping).seconds
    guard (400_000...600_000).contains(capped.deliveries), capped.devices >= 100 else {
        throw BenchError(description: "the cap removed \(capped.deliveries) deliveries of \(capped.devices) devices")
    }
    log("retention: half of a million deliveries cut over the cap, by holder, in \(String(format: "%.2f", cut)) s")
    rows.append(
        BenchRow(
            scenario: "cut a million deliveries to half the cap, largest holders first (SQLite)", value: cut * 1000,
            unit: "ms", target: "< 10000", met: cut < 10))
    return rows
}
