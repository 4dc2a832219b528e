import Foundation
import NotificationHubs

/// A notification row's columns as a store read them, before any check: what both stores
/// write (`columns`) and read back (`stored`), one codec for the two.
package struct NotificationColumns: Sendable, Hashable {
    package var hub: String?
    package var id: String?
    package var format: String?
    package var tags: String?
    package var body: String?
    /// A JSON object of header names and values.
    package var headers: String?
    package var directHandle: String?
    package var test: Bool?
    package var enqueued: Double?
    package var state: String?
    package var started: Double?
    package var ended: Double?
    /// A JSON object of outcome names and counts (as text).
    package var outcome: String?
    package var fireAt: Double?
    /// A direct batch's handles, a JSON array.
    package var directHandles: String?
    /// The first devices' outcomes (`SendExplanation.Line`), a JSON array.
    package var report: String?
    /// How many starts of the hub began its dispatch (`HubMutation.beginDispatch`).
    package var starts: Int64?
}

extension StoredNotification {
    /// The columns a store writes for this notification.
    package var columns: NotificationColumns {
        NotificationColumns(
            hub: hub, id: id, format: format.rawValue, tags: tagExpression, body: body, headers: StoredCodec.encode(headers),
            directHandle: directHandle, test: isTest, enqueued: enqueued.timeIntervalSince1970, state: state.rawValue,
            started: started?.timeIntervalSince1970, ended: ended?.timeIntervalSince1970,
            outcome: StoredCodec.encode(outcomeCounts.mapValues(String.init)), fireAt: scheduledFor?.timeIntervalSince1970,
            directHandles: batchHandles.map { JSONValue.array($0.map(JSONValue.string)).text },
            report: StoredCodec.encode(report), starts: Int64(dispatchStarts))
    }

    /// A notification read from its row's columns, checked as a request is (`checkedStored`):
    /// every column the hub always writes present, times from 2000 to 9999, a format and
    /// state the hub knows. What fails is a row no hub wrote: it is set aside, never sent.
    package static func stored(_ row: NotificationColumns) throws(QuarantineReason) -> StoredNotification {
        guard let hub = row.hub, let id = row.id, let formatName = row.format, let body = row.body,
            let headers = row.headers, let test = row.test, let enqueued = row.enqueued, let stateName = row.state,
            let outcome = row.outcome
        else { throw QuarantineReason(description: "a column the hub always writes is missing") }
        guard let format = NotificationFormat(wireValue: formatName) else {
            throw QuarantineReason(description: "its format '\(formatName.prefix(40))' is not one the hub sends")
        }
        guard let state = NotificationDetails.State(rawValue: stateName) else {
            throw QuarantineReason(description: "its state '\(stateName.prefix(40))' is not one the hub writes")
        }
        guard hub.utf8.count <= 256, id.utf8.count <= 256, StoredText.forbidden(in: hub) == nil,
            StoredText.forbidden(in: id) == nil
        else { throw QuarantineReason(description: "its hub or id is not what a send writes") }
        var n = StoredNotification(
            hub: hub, id: id, format: format, tagExpression: row.tags, body: body, headers: StoredCodec.decode(headers),
            directHandle: row.directHandle, isTest: test, enqueued: try StoredRange.time(enqueued, "its enqueue time"))
        n.state = state
        n.started = try row.started.map { seconds throws(QuarantineReason) in try StoredRange.time(seconds, "its start") }
        n.ended = try row.ended.map { seconds throws(QuarantineReason) in try StoredRange.time(seconds, "its end") }
        n.scheduledFor = try row.fireAt.map { seconds throws(QuarantineReason) in
            try StoredRange.time(seconds, "its schedule time")
        }
        n.outcomeCounts = StoredCodec.decode(outcome).compactMapValues { Int($0).flatMap { $0 >= 0 ? $0 : nil } }
        n.report = StoredCodec.decodeReport(row.report)
        // A batch whose handles cannot be read reaches no one (never everyone, as a send
        // without handles and tags would).
        n.batchHandles = row.directHandles.map { ((try? JSONValue(parsing: $0))?.arrayValue ?? []).compactMap(\.stringValue) }
        n.dispatchStarts = try StoredRange.count(row.starts ?? 0, "its starts")
        return try n.checkedStored()
    }
}

/// The texts both stores keep inside a row: header and outcome maps as JSON objects, a
/// send's report as the JSON array `SendExplanation` writes.
enum StoredCodec {
    static func encode(_ map: [String: String]) -> String {
        JSONValue.object(map.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).text
    }

    /// A send's report as stored: what `SendExplanation` writes of its lines; nil for none.
    static func encode(_ report: [SendExplanation.Line]) -> String? {
        guard !report.isEmpty else { return nil }
        let partial = SendExplanation(
            notificationId: "", hub: "", format: "", tagExpression: nil, state: "", enqueued: "", scheduledFor: nil, counts: [:],
            matches: [], matchCount: 0, nearMisses: [], renderings: [], lines: report, findings: [])
        return JSONValue.array(partial.json["lines"]?.arrayValue ?? []).text
    }

    static func decodeReport(_ text: String?) -> [SendExplanation.Line] {
        guard let text, let lines = try? JSONValue(parsing: text) else { return [] }
        return
            (try? SendExplanation(
                json: .object([
                    ("notificationId", .string("")), ("hub", .string("")), ("format", .string("")), ("state", .string("")),
                    ("lines", lines),
                ])))?.lines ?? []
    }

    /// A JSON object of texts; members of other kinds, and text that is no object, read as none.
    static func decode(_ text: String) -> [String: String] {
        guard let members = (try? JSONValue(parsing: text))?.objectMembers else { return [:] }
        return Dictionary(members.compactMap { key, value in value.stringValue.map { (key, $0) } }, uniquingKeysWith: { $1 })
    }
}
