import Foundation
import NotificationHubs

/// Which received messages `log` lists: a category, only the unread, those since a time, the
/// last N. Listing never changes what is read (`log --mark-read` asks for that).
public struct LogQuery: Sendable, Hashable {
    public var category: String?
    public var unreadOnly = false
    public var since: Date?
    /// The last this many, after the other conditions.
    public var last: Int?

    public init(category: String? = nil, unreadOnly: Bool = false, since: Date? = nil, last: Int? = nil) {
        self.category = category
        self.unreadOnly = unreadOnly
        self.since = since
        self.last = last
    }

    /// Whether `entry` is listed (before `last` is applied).
    public func admits(_ entry: InboxEntry, marks: InboxMarks) -> Bool {
        if marks.deleted.contains(entry.index) { return false }
        if let category, entry.category != category { return false }
        if unreadOnly, marks.read.contains(entry.index) { return false }
        if let since {
            guard let received = W3CDate.parse(entry.receivedAt), received >= since else { return false }
        }
        return true
    }

    /// The entries listed, oldest first.
    public func select(_ entries: [InboxEntry], marks: InboxMarks) -> [InboxEntry] {
        let admitted = entries.filter { admits($0, marks: marks) }
        guard let last else { return admitted }
        return Array(admitted.suffix(max(0, last)))
    }

    /// A time as `--since` takes it: `90s`, `15m`, `2h`, `3d`, `1w` ago; `today` or
    /// `yesterday` (local midnight); `HH:MM[:SS]` today; `YYYY-MM-DD` (local midnight);
    /// `YYYY-MM-DD HH:MM[:SS]` local; or a W3C date-time with its offset
    /// (`2026-11-21T17:38:56Z`). Nil for anything else.
    public static func time(_ text: String, now: Date = Date()) -> Date? {
        let text = text.trimmingCharacters(in: .whitespaces)
        if let unit = text.last, let seconds = ["s": 1.0, "m": 60, "h": 3600, "d": 86_400, "w": 604_800][unit],
            let count = Double(text.dropLast()), count >= 0, count.isFinite
        {
            return now.addingTimeInterval(-count * seconds)
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        let midnight = calendar.startOfDay(for: now)
        switch text.lowercased() {
        case "today": return midnight
        case "yesterday": return calendar.date(byAdding: .day, value: -1, to: midnight)
        default: break
        }
        if let date = W3CDate.parse(text), text.contains("T") { return date }
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        var day = midnight
        var clock: Substring?
        switch parts.count {
        case 1 where parts[0].contains(":"): clock = parts[0]
        case 1, 2:
            let ymd = parts[0].split(separator: "-")
            guard ymd.count == 3, ymd[0].count == 4, let y = Int(ymd[0]), let m = Int(ymd[1]), let d = Int(ymd[2]),
                let date = calendar.date(from: DateComponents(year: y, month: m, day: d)),
                calendar.component(.month, from: date) == m, calendar.component(.day, from: date) == d
            else { return nil }
            day = date
            clock = parts.count == 2 ? parts[1] : nil
        default: return nil
        }
        guard let clock else { return day }
        let hms = clock.split(separator: ":")
        guard (2...3).contains(hms.count), hms.allSatisfy({ $0.count == 2 }),
            let h = Int(hms[0]), let mi = Int(hms[1]), let s = hms.count == 3 ? Int(hms[2]) : 0,
            (0..<24).contains(h), (0..<60).contains(mi), (0..<60).contains(s)
        else { return nil }
        return calendar.date(bySettingHour: h, minute: mi, second: s, of: day)
    }
}
