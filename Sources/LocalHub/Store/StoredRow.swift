import Foundation
import Logging
import NotificationHubs
import Synchronization

/// The most a stored row may hold: four times the largest request body, which no request
/// could make (a stored row is its body plus what the hub adds).
let largestStoredRow = 256 << 10

/// What a stored number or time may be. A value outside is one no hub wrote: the row that
/// holds it is set aside, and numbering that would pass it stops (`StoredValueOutOfRange`).
package enum StoredRange {
    /// Delivery numbers and their reservations: 0 through 2^62, which no log reaches (a
    /// million deliveries a second for a hundred thousand years), so that arithmetic on them
    /// never overflows.
    package static let sequence: ClosedRange<Int64> = 0...(1 << 62)
    /// Times, in seconds since 1970: from 2000 to the end of 9999.
    package static let time: ClosedRange<Double> = 946_684_800...253_402_300_799
    /// Counts kept in rows (a gap's deliveries, a send's starts).
    static let count: ClosedRange<Int64> = 0...(1 << 62)

    /// Numbers from which a restore or a move numbers its log afresh (in its new epoch), rather
    /// than on above them: a backup's numbers this high were written by hand, and numbering on
    /// would leave the restored hub too few to send with.
    static let restoreHeadroom: Int64 = 1 << 61

    /// `value` held to the range of delivery numbers: for arithmetic on what a store holds,
    /// which must never overflow whatever a row says.
    static func clamped(_ value: Int64) -> Int64 { min(max(value, sequence.lowerBound), sequence.upperBound) }

    /// `value` when it is a delivery number, else the reason naming `what`.
    static func sequence(_ value: Int64, _ what: String) throws(QuarantineReason) -> Int64 {
        guard sequence.contains(value) else {
            throw QuarantineReason(description: "\(what) \(value) is not a delivery number (0 to 2^62)")
        }
        return value
    }

    /// `seconds` as a date when it is a time from 2000 to 9999, else the reason naming `what`.
    static func time(_ seconds: Double, _ what: String) throws(QuarantineReason) -> Date {
        guard time.contains(seconds) else {
            throw QuarantineReason(description: "\(what) \(seconds) is not a time from 2000 to 9999")
        }
        return Date(timeIntervalSince1970: seconds)
    }

    /// `value` when it is a count, else the reason naming `what`.
    static func count(_ value: Int64, _ what: String) throws(QuarantineReason) -> Int {
        guard count.contains(value) else { throw QuarantineReason(description: "\(what) \(value) is not a count") }
        return Int(value)
    }
}

extension Installation {
    /// An installation read from its stored row: its JSON, which must carry the row's id and
    /// pass every check a request's installation passes (a row written by hand gets no
    /// more trust than a request).
    package static func stored(json: String, id: some Sequence<UInt8>) throws -> Installation {
        guard json.utf8.count <= largestStoredRow else {
            throw QuarantineReason(description: "the row holds \(json.utf8.count) bytes, more than any request could write")
        }
        let installation = try Installation(jsonText: json.utf8)
        guard installation.installationId.utf8.elementsEqual(id) else {
            throw QuarantineReason(description: "the id in the row differs from the one in its JSON")
        }
        _ = try installation.validatedForStorage(lastUpdate: installation.lastUpdate ?? "")
        return installation
    }
}

extension StoredRegistration {
    /// A registration read from its stored row: its Atom XML, which must carry the row's id.
    package static func stored(hub: String, id: some Sequence<UInt8>, xml: String, created: Double, updated: Double) throws
        -> StoredRegistration
    {
        guard xml.utf8.count <= largestStoredRow else {
            throw QuarantineReason(description: "the row holds \(xml.utf8.count) bytes, more than any request could write")
        }
        let registration = try Registration(atom: xml)
        guard (registration.registrationId ?? "").utf8.elementsEqual(id) else {
            throw QuarantineReason(description: "the id in the row differs from the one in its XML")
        }
        _ = try registration.validatedForStorage()
        return StoredRegistration(
            hub: hub, registration: registration, created: try StoredRange.time(created, "its creation time"),
            updated: try StoredRange.time(updated, "its update time"))
    }
}

extension Delivery {
    /// A delivery read from the log, checked as the hub wrote it: every field present, an
    /// APNs payload in compact JSON (a line break would end a stream's frame early and let
    /// the row's writer start frames of its own), and fields no send could have refused.
    package static func stored(
        seq: Int64?, hub: String?, device: String, notificationId: String?, template: String?, payload: String?,
        delivered: Double?, tags: String?
    ) throws(QuarantineReason) -> Delivery {
        guard let seq, let hub, let notificationId, let template, let payload, let delivered else {
            throw QuarantineReason(description: "a field the hub always writes is missing")
        }
        let number = try StoredRange.sequence(seq, "its number")
        let at = try StoredRange.time(delivered, "its time")
        let bytes = Array(payload.utf8)
        guard !bytes.contains(where: { $0 == 0x0A || $0 == 0x0D }), APNsPayloadRules.check(bytes) == nil else {
            throw QuarantineReason(description: "the payload is not compact APNs JSON of at most 4096 bytes")
        }
        func printable(_ text: String, most: Int) -> Bool {
            text.utf8.count <= most && StoredText.forbidden(in: text) == nil
        }
        guard printable(notificationId, most: 256), printable(template, most: 1024), printable(hub, most: 256),
            tags.map({ printable($0, most: 8192) }) ?? true
        else { throw QuarantineReason(description: "its id, template, hub or tags are not what a send writes") }
        return Delivery(
            seq: number, hub: hub, device: device, notificationId: notificationId, template: template, payload: payload,
            delivered: at, tags: tags)
    }
}

extension StoredNotification {
    /// A notification read from its row, checked as a request is: a body no request could
    /// send, a tag expression that does not read (it would otherwise reach everyone), or more
    /// handles than a batch may name is refused.
    func checkedStored() throws(QuarantineReason) -> StoredNotification {
        guard body.utf8.count <= largestStoredRow else {
            throw QuarantineReason(description: "its body holds \(body.utf8.count) bytes, more than any request could send")
        }
        if let tagExpression {
            guard tagExpression.utf8.count <= 8192, (try? TagExpression(parsing: tagExpression)) != nil else {
                throw QuarantineReason(description: "its tag expression does not read")
            }
        }
        guard (directHandle?.utf8.count ?? 0) <= 8192, (batchHandles?.count ?? 0) <= DirectBatch.maximumDevices,
            headers.count <= 64, headers.allSatisfy({ $0.key.utf8.count + $0.value.utf8.count <= 16 << 10 })
        else { throw QuarantineReason(description: "its handles or headers are more than a request may give") }
        return self
    }
}

/// Logs each stored row that failed its checks once (a stream reading past it again does
/// not log it again), remembering at most `capacity` of them.
final class SkippedRows: Sendable {
    static let shared = SkippedRows()
    static let capacity = 4096

    private let seen = Mutex<Set<String>>([])
    private let logger = Logger(label: "local-hub")

    func skip(_ what: String, _ reason: QuarantineReason, logger: Logger? = nil) {
        let first = seen.withLock { seen -> Bool in
            if seen.count >= Self.capacity { seen.removeAll() }
            return seen.insert(what).inserted
        }
        if first { (logger ?? self.logger).error("skipped \(what) read from the store: \(reason)") }
    }
}

/// A delivery log's epoch: made when a store is created (and by a restore or a move), so
/// that numbers of one log are never compared with another's.
enum HubEpoch {
    static func make() -> String { UUID().uuidString.lowercased() }

    /// Whether `text` can be an epoch: 1 to 64 letters, digits and `-`, as every hub made them.
    static func isValid(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "-")
            }
    }
}

/// The digest of a claim's secret (`BuiltInPushClaim.digest`) as a store keeps it.
enum ClaimDigest {
    /// What no secret's digest is: the digest of a claim whose stored digest is unreadable, so
    /// that the claim fails closed (no secret opens it; its terminal takes a new token).
    static let unreadable = "unreadable"

    /// A stored digest: nil for none (a claim of before secrets), the digest when it has the
    /// shape of one (64 hex digits), else `unreadable`.
    static func stored(_ text: String?) -> String? {
        guard let text else { return nil }
        guard text.utf8.count == 64,
            text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x46) || ($0 >= 0x61 && $0 <= 0x66) })
        else { return unreadable }
        return text.uppercased()
    }
}
