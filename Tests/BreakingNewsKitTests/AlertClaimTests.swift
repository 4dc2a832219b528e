import BreakingNewsKit
import Foundation
import NotificationHubs
import Testing

/// One arrival alert per message per home: every window of the home claims the alert for the
/// news it shows, and only the first claim of a position wins.
struct AlertClaimTests {
    @Test func theFirstWindowToClaimAPositionAlertsAndNoOtherDoes() throws {
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("inbox.jsonl")
        let (a, b) = (InboxLog(url: url), InboxLog(url: url))
        #expect(a.claimAlert(through: 1))
        #expect(!b.claimAlert(through: 1), "the other window of the home stays quiet")
        #expect(!a.claimAlert(through: 1), "once")
        #expect(b.claimAlert(through: 3))
        #expect(!a.claimAlert(through: 2), "behind what was alerted")
        #expect(InboxLog(url: url).claimAlert(through: 4), "kept on disk")

        let alerted = folder.appendingPathComponent("inbox-alerted.json")
        #expect(try String(contentsOf: alerted, encoding: .utf8) == #"{"through":4}"#)
        let mode = try FileManager.default.attributesOfItem(atPath: alerted.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func aDamagedFileReadsAsNothingAlerted() throws {
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = InboxLog(url: folder.appendingPathComponent("inbox.jsonl"))
        let alerted = folder.appendingPathComponent("inbox-alerted.json")
        for damaged in ["{", #"{"through":"x"}"#, "[]", #"{"through":99999999999999999999999}"#] {
            try Data(damaged.utf8).write(to: alerted)
            #expect(log.claimAlert(through: 1), "\(damaged)")
            #expect(!log.claimAlert(through: 1))
        }
    }

    /// A log begun anew (its first message is another) is not silent up to the position the
    /// old one had reached.
    @Test func aLogBegunAnewAlertsAgain() throws {
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("inbox.jsonl")
        let delivery = { (seq: Int64, id: String) in
            BuiltInPushDelivery(
                seq: seq, notificationId: id, hub: "news", device: "ab", template: nil, tags: "World",
                deliveredAt: "2026-11-21T10:00:00Z", payload: .object([("aps", .object([("alert", .string(id))]))]))
        }
        let old = InboxLog(url: url)
        try old.append((1...5).map { delivery(Int64($0), "old\($0)") }, hub: "h", categoryOf: { _ in "World" })
        #expect(old.claimAlert(through: 5))
        try FileManager.default.removeItem(at: url)
        let anew = InboxLog(url: url)
        try anew.append([delivery(1, "new1")], hub: "h", categoryOf: { _ in "World" })
        #expect(anew.claimAlert(through: 1), "the first message of the new log alerts")
        #expect(!anew.claimAlert(through: 1))
    }
}
