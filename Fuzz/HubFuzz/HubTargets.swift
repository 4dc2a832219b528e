// The hub's readers of what it keeps on disk: the key file, a backup's `backup_info` row and
// the stored rows of its stores. What they read was written by a hub, or by hand, or is a
// damaged or hostile file: each reader either refuses it or gives back what the hub would
// write again, and never traps.
import Foundation
import LocalHub
import LocalHubSupport
import NotificationHubs

/// A fuzz input's fields, split on 0x1F (the unit separator); the last field takes the rest.
/// An empty or missing field is nil (a column that is NULL); one that starts with 0x1E (the
/// record separator) is the text after it, so that an empty text can be given too.
struct FuzzFields {
    let parts: [ArraySlice<UInt8>]

    init(_ bytes: ArraySlice<UInt8>, count: Int) {
        parts = bytes.split(separator: 0x1F, maxSplits: count - 1, omittingEmptySubsequences: false)
    }

    func text(_ index: Int) -> String? {
        guard index < parts.count, let first = parts[index].first else { return nil }
        return String(decoding: first == 0x1E ? parts[index].dropFirst() : parts[index], as: UTF8.self)
    }

    func int(_ index: Int) -> Int64? { text(index).flatMap { Int64($0) } }
    func double(_ index: Int) -> Double? { text(index).flatMap { Double($0) } }
    /// A field's first byte, odd for true.
    func bool(_ index: Int) -> Bool? { index < parts.count ? parts[index].first.map { $0 & 1 == 1 } : nil }
}

func fuzzKeysFile(_ bytes: [UInt8]) {
    guard let contents = LocalHubKeyFile.decode(bytes) else { return }
    _ = contents.problems()
    // What the hub writes of what it read reads back the same (a version-1 file is written as
    // version 2, with the same rules), and writes the same text again.
    let text = LocalHubKeyFile.encode(contents)
    guard let again = LocalHubKeyFile.decode(text.utf8) else {
        check(false, "an encoded key file does not decode: \(text)")
        return
    }
    check(again.hubs == contents.hubs, "the rules do not read back from \(text)")
    check(again.generation == contents.generation, "the generation does not read back from \(text)")
    check(!again.isVersion1, "an encoded key file reads as version 1")
    check(LocalHubKeyFile.encode(again) == text, "encoding a key file read back gives other text")
    check(again.problems() == contents.problems(), "the problems of a key file change when it is written")
}

func fuzzBackupInfo(_ bytes: [UInt8]) {
    // format, keys, source epoch, highest_seq, created, source
    let fields = FuzzFields(bytes[...], count: 6)
    let columns = BackupInfoColumns(
        format: fields.int(0), keys: fields.text(1), sourceEpoch: fields.text(2), highestSequence: fields.int(3),
        created: fields.text(4), source: fields.text(5))
    guard let info = try? HubBackupInfo.stored(columns, file: "fuzz.backup") else { return }
    check(info.format == HubBackupInfo.currentFormat, "a backup of format \(info.format) was read")
    check((0...(Int64(1) << 62)).contains(info.highestSequence), "a highest number out of range: \(info.highestSequence)")
    check(info.keys == fields.text(1), "the keys' text was not kept as it was")
    check(["sqlite", "postgres", "unknown"].contains(info.source), "an unknown source: \(info.source)")
    // The row a copy stamps reads back as the same info (its time to the written precision).
    let stamped = BackupInfoColumns(
        format: Int64(info.format), keys: info.keys, sourceEpoch: info.sourceEpoch, highestSequence: info.highestSequence,
        created: W3CDate.format(info.created), source: info.source)
    if let again = try? HubBackupInfo.stored(stamped, file: "fuzz.backup") {
        check(
            again.keys == info.keys && again.sourceEpoch == info.sourceEpoch && again.highestSequence == info.highestSequence
                && again.source == info.source, "a stamped backup_info reads back otherwise")
        if StoredRange.time.contains(info.created.timeIntervalSince1970) {
            check(abs(again.created.timeIntervalSince(info.created)) < 0.001, "a backup's time does not read back")
        }
    } else {
        check(false, "a stamped backup_info does not read back")
    }
    // The keys, checked as a restore checks them: what passes is a key set a hub may serve.
    guard let keys = try? HubBackup.checkedKeys(info, file: URL(fileURLWithPath: "/fuzz.backup")) else { return }
    check(keys.problems().isEmpty, "a restore would take keys with problems: \(keys.problems())")
    check(!keys.isVersion1, "a restore would take keys not upgraded")
    check(LocalHubKeyFile.decode(LocalHubKeyFile.encode(keys).utf8)?.hubs == keys.hubs, "checked keys do not read back")
}

enum StoredRowKind: UInt8, CaseIterable {
    case notification, installation, registration, delivery
}

func fuzzStoredRows(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let kind = StoredRowKind.allCases[Int(first) % StoredRowKind.allCases.count]
    let rest = bytes.dropFirst()
    switch kind {
    case .notification: fuzzStoredNotification(FuzzFields(rest, count: 17))
    case .installation: fuzzStoredInstallation(FuzzFields(rest, count: 2))
    case .registration: fuzzStoredRegistration(FuzzFields(rest, count: 5))
    case .delivery: fuzzStoredDelivery(FuzzFields(rest, count: 8))
    }
}

func fuzzStoredNotification(_ fields: FuzzFields) {
    // The columns of any notification, every one then replaced by a field.
    var row = StoredNotification(hub: "", id: "", format: .template, tagExpression: nil, body: "").columns
    row.hub = fields.text(0)
    row.id = fields.text(1)
    row.format = fields.text(2)
    row.tags = fields.text(3)
    row.body = fields.text(4)
    row.headers = fields.text(5)
    row.directHandle = fields.text(6)
    row.test = fields.bool(7)
    row.enqueued = fields.double(8)
    row.state = fields.text(9)
    row.started = fields.double(10)
    row.ended = fields.double(11)
    row.outcome = fields.text(12)
    row.fireAt = fields.double(13)
    row.directHandles = fields.text(14)
    row.report = fields.text(15)
    row.starts = fields.int(16)
    guard let n = try? StoredNotification.stored(row) else { return }
    for (name, date) in [("enqueued", n.enqueued), ("started", n.started), ("ended", n.ended), ("fireAt", n.scheduledFor)] {
        guard let date else { continue }
        check(StoredRange.time.contains(date.timeIntervalSince1970), "\(name) out of range: \(date.timeIntervalSince1970)")
    }
    check(n.dispatchStarts >= 0 && n.outcomeCounts.values.allSatisfy { $0 >= 0 }, "a negative count was read")
    // What a store writes of it reads back the same.
    do {
        let again = try StoredNotification.stored(n.columns)
        check(again == n, "a stored notification does not read back from its columns: \(n) then \(again)")
    } catch {
        check(false, "a stored notification's own columns are refused: \(error); \(n.columns)")
    }
}

func fuzzStoredInstallation(_ fields: FuzzFields) {
    let id = fields.text(0) ?? ""
    guard let installation = try? Installation.stored(json: fields.text(1) ?? "", id: id.utf8) else { return }
    check(installation.installationId == id, "an installation read under another id")
    // What a store writes of it (its JSON) reads back the same.
    do {
        // (Compared as the store keeps it, its JSON: an empty list of tags reads as given and
        // is written as none, which is the same installation to every send.)
        let again = try Installation.stored(json: installation.json.text, id: installation.installationId.utf8)
        check(
            again.json.text == installation.json.text,
            "a stored installation does not read back from its JSON: \(installation.json.text) then \(again.json.text)")
    } catch {
        check(false, "a stored installation's own JSON is refused: \(error); \(installation.json.text)")
    }
}

func fuzzStoredRegistration(_ fields: FuzzFields) {
    let hub = fields.text(0) ?? ""
    let id = fields.text(1) ?? ""
    guard
        let stored = try? StoredRegistration.stored(
            hub: hub, id: id.utf8, xml: fields.text(2) ?? "", created: fields.double(3) ?? .nan,
            updated: fields.double(4) ?? .nan)
    else { return }
    check(stored.id == id, "a registration read under another id")
    for date in [stored.created, stored.updated] {
        check(StoredRange.time.contains(date.timeIntervalSince1970), "a registration time out of range")
    }
    // What a store writes of it (its description) reads back with what a send uses.
    do {
        let again = try StoredRegistration.stored(
            hub: hub, id: id.utf8, xml: stored.registration.descriptionXML, created: stored.created.timeIntervalSince1970,
            updated: stored.updated.timeIntervalSince1970)
        let (r, a) = (stored.registration, again.registration)
        check(again.created == stored.created && again.updated == stored.updated, "a registration's times do not read back")
        check(a.kind == r.kind && a.deviceToken == r.deviceToken && a.tags == r.tags, "a registration does not read back")
        check(a.etag == r.etag && a.expirationTime == r.expirationTime, "a registration's etag or expiry does not read back")
        if r.kind == .appleTemplate {
            check(
                a.bodyTemplate == r.bodyTemplate && a.templateName == r.templateName && a.apnsHeaders == r.apnsHeaders,
                "a template registration's template does not read back")
        }
    } catch {
        check(false, "a stored registration's own description is refused: \(error); \(stored.registration.descriptionXML)")
    }
}

func fuzzStoredDelivery(_ fields: FuzzFields) {
    guard
        let delivery = try? Delivery.stored(
            seq: fields.int(0), hub: fields.text(1), device: fields.text(2) ?? "", notificationId: fields.text(3),
            template: fields.text(4), payload: fields.text(5), delivered: fields.double(6), tags: fields.text(7))
    else { return }
    check(StoredRange.sequence.contains(delivery.seq), "a delivery numbered \(delivery.seq) was read")
    check(StoredRange.time.contains(delivery.delivered.timeIntervalSince1970), "a delivery's time out of range")
    check(!delivery.payload.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }), "a payload with a line break was read")
    let again = try? Delivery.stored(
        seq: delivery.seq, hub: delivery.hub, device: delivery.device, notificationId: delivery.notificationId,
        template: delivery.template, payload: delivery.payload, delivered: delivery.delivered.timeIntervalSince1970,
        tags: delivery.tags)
    check(again == delivery, "a stored delivery does not read back from its columns")
}
