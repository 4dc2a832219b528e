import Foundation
import NotificationHubs
import Testing

@testable import BreakingNewsKit

/// Issue 47: every message keeps the time it was sent, which the Log shows, and times are
/// written one way.
struct SendTimeTests {
    /// A W3C time of a local date and time.
    static func local(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int, _ second: Int = 0) -> String {
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return W3CDate.format(Calendar.current.date(from: components)!)
    }

    static func delivery(id: String, deliveredAt: String, seq: Int64) -> BuiltInPushDelivery {
        BuiltInPushDelivery(
            seq: seq, notificationId: id, hub: "news", device: "d", template: "t", tags: "World", deliveredAt: deliveredAt,
            payload: .object([("aps", .object([("alert", .string("Rates hold"))]))]), epoch: "e")
    }

    @Test func aMessageReceivedAWeekLateKeepsTheTimeTheHubWroteIt() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sent-\(UUID().uuidString)/inbox.jsonl")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let log = InboxLog(url: url)
        let sent = "2026-11-25T08:15:00Z"
        let arrived = try #require(W3CDate.parse("2026-12-02T19:17:04Z"))
        let added = try log.append(
            [Self.delivery(id: "a-20261125081500-1", deliveredAt: sent, seq: 1)], hub: "http://h/news",
            categoryOf: { _ in "World" }, now: arrived)
        let entry = try #require(added.first)
        #expect(W3CDate.parse(entry.sentAt) == W3CDate.parse(sent))
        #expect(W3CDate.parse(entry.receivedAt) == arrived)
        #expect(entry.receivedLate)
        // `log --json` carries both; another process reads both back.
        let line = try JSONValue(parsing: entry.jsonLine)
        #expect(line["sentAt"]?.stringValue.flatMap(W3CDate.parse) == W3CDate.parse(sent))
        #expect(line["receivedAt"]?.stringValue.flatMap(W3CDate.parse) == arrived)
        #expect(InboxLog(url: url).entries.map(\.sentAt) == [entry.sentAt])
    }

    @Test func aLineWrittenBeforeTakesItsSendTimeFromItsIdElseItsReceivedTime() throws {
        func entry(_ id: String) throws -> InboxEntry {
            let json = try JSONValue(parsing: #"{"id":"\#(id)","seq":3,"receivedAt":"2026-12-01T19:17:04Z","text":"x"}"#)
            return try #require(InboxEntry(json: json, index: 1))
        }
        #expect(W3CDate.parse(try entry("a9f0-20261201191416-1").sentAt) == W3CDate.parse("2026-12-01T19:14:16Z"))
        // Not the hub's shape (Azure's ids, a month 13, too few digits): the received time.
        for id in ["a9f0", "a9f0-20261301191416-1", "a9f0-2026120119141-1", "a9f0-2026120119141x-1"] {
            #expect(try entry(id).sentAt == "2026-12-01T19:17:04Z", "\(id)")
        }
    }

    @Test func aSendTimeAfterTheArrivalOrNoTimeAtAllIsTheArrival() {
        let received = "2026-12-02T10:00:00Z"
        // A hub whose clock is ahead, or that says a message comes from the future.
        #expect(InboxEntry.sentTime("9999-01-01T00:00:00Z", id: "x", receivedAt: received) == received)
        #expect(InboxEntry.sentTime("2026-12-02T10:00:30Z", id: "x", receivedAt: received) == received)
        #expect(InboxEntry.sentTime("yesterday", id: "x", receivedAt: received) == received)
        #expect(
            W3CDate.parse(InboxEntry.sentTime(nil, id: "x-20261202095900-1", receivedAt: received))
                == W3CDate.parse("2026-12-02T09:59:00Z"))
    }

    @Test func timesReadTheSameInTheWindowAndTheCommands() throws {
        let now = try #require(W3CDate.parse(Self.local(2026, 12, 2, 12, 0)))  // a Wednesday
        let cases: [(String, String)] = [
            (Self.local(2026, 12, 2, 9, 5, 3), "09:05:03"),
            (Self.local(2026, 12, 2, 0, 0, 0), "00:00:00"),
            (Self.local(2026, 12, 1, 23, 59, 59), "Tue 23:59"),
            (Self.local(2026, 11, 26, 14, 5), "Thu 14:05"),
            (Self.local(2026, 11, 25, 14, 5), "11-25 14:05"),
            (Self.local(2026, 1, 1, 0, 0), "01-01 00:00"),
            (Self.local(2025, 12, 31, 23, 0), "2025-12-31"),
            // Later than now (another machine's clock): the date, never a weekday.
            (Self.local(2026, 12, 3, 8, 0), "12-03 08:00"),
            ("not a date", "not a date"),
        ]
        for (w3c, expected) in cases {
            #expect(DisplayTime.short(w3c, now: now) == expected, "\(w3c)")
            #expect(DisplayTime.column(w3c, now: now) == expected.padding(toLength: 11, withPad: " ", startingAt: 0))
        }
        #expect(DisplayTime.full(Self.local(2026, 11, 21, 17, 39, 14)) == "Sat 2026-11-21 17:39:14")
        #expect(DisplayTime.full("not a date") == "not a date")
        // A time in a log line that is no date, with escapes in it: shown, never obeyed.
        let hostile = "\u{1B}]52;c;AAAA\u{07}\u{1B}[2J"
        for shown in [DisplayTime.short(hostile, now: now), DisplayTime.full(hostile)] {
            #expect(!shown.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(shown.debugDescription)")
        }
    }
}
