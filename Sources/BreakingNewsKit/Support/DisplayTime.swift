import Foundation
import NotificationHubs

/// Times as people read them in a terminal, in local time, written one way by the window and
/// the commands alike. Formatted by hand with `localtime_r`: a DateFormatter would load ICU
/// into every terminal for a few fields.
///
/// A time of today is `14:05:09`; of the six days before, the weekday and the minute
/// (`Mon 14:05`); earlier this year, the month, day and minute (`11-25 14:05`); before that,
/// the date (`2025-11-25`). In full (a message's own view) it always has the weekday and the
/// date: `Wed 2026-12-02 14:05:09`.
public enum DisplayTime {
    /// `w3c` as its column shows it, without the padding; the text itself when it is not a
    /// W3C date.
    public static func short(_ w3c: String, now: Date = Date()) -> String {
        let text = TimeColumn(now: now).text(w3c)
        return String(text.reversed().drop { $0 == " " }.reversed())
    }

    /// The time column of a list: 11 cells whatever the day, so rows of other days do not
    /// shift the columns after it.
    public static func column(_ w3c: String, now: Date = Date()) -> String {
        TimeColumn(now: now).text(w3c)
    }

    /// `w3c` with its weekday and date (`Wed 2026-12-02 14:05:09`); the text itself when it
    /// is not a W3C date.
    public static func full(_ w3c: String) -> String {
        guard let date = W3CDate.parse(w3c) else { return TerminalText.line(w3c) }
        let then = local(date)
        return "\(weekdays[Int(then.tm_wday)]) \(then.tm_year + 1900)-\(pad(then.tm_mon + 1))-\(pad(then.tm_mday)) "
            + "\(pad(then.tm_hour)):\(pad(then.tm_min)):\(pad(then.tm_sec))"
    }

    static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let weekdayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

    /// The local day of the time `seconds` after 1970, as a number that differs from any
    /// other day's.
    public static func day(_ seconds: Double) -> Int {
        let then = local(Date(timeIntervalSince1970: seconds))
        return Int(then.tm_year) * 1000 + Int(then.tm_yday)
    }

    /// What a Log's day separator says of the day of `seconds`: `Today`, `Yesterday`, the
    /// weekday for the five days before, else the weekday and the date (`Tue 2026-11-24`).
    public static func dayName(_ seconds: Double, now: Date) -> String {
        let then = local(Date(timeIntervalSince1970: seconds))
        switch TimeColumn(now: now).daysBefore(then) {
        case 0?: return "Today"
        case 1?: return "Yesterday"
        case let days? where days < 7: return weekdayNames[Int(then.tm_wday)]
        default:
            return "\(weekdays[Int(then.tm_wday)]) \(then.tm_year + 1900)-\(pad(then.tm_mon + 1))-\(pad(then.tm_mday))"
        }
    }

    /// The time column against one `now`, whose day is worked out once for a whole list.
    public struct TimeColumn: Sendable {
        /// Local midnight today, as seconds since 1970.
        private let midnight: Int
        private let year: Int32

        public init(now: Date) {
            var today = DisplayTime.local(now)
            year = today.tm_year
            (today.tm_hour, today.tm_min, today.tm_sec, today.tm_isdst) = (0, 0, 0, -1)
            midnight = Int(mktime(&today))
        }

        /// The column of `w3c` (see `DisplayTime`).
        public func text(_ w3c: String) -> String {
            let text: String
            if let date = W3CDate.parse(w3c) {
                let then = DisplayTime.local(date)
                let clock = "\(pad(then.tm_hour)):\(pad(then.tm_min))"
                let days = daysBefore(then)
                if days == 0 {
                    text = "\(clock):\(pad(then.tm_sec))"
                } else if let days, days < 7 {
                    text = "\(DisplayTime.weekdays[Int(then.tm_wday)]) \(clock)"
                } else if then.tm_year == year {
                    text = "\(pad(then.tm_mon + 1))-\(pad(then.tm_mday)) \(clock)"
                } else {
                    text = "\(then.tm_year + 1900)-\(pad(then.tm_mon + 1))-\(pad(then.tm_mday))"
                }
            } else {
                // Read from a file someone else may have written: no control character
                // reaches the terminal.
                text = String(TerminalText.line(w3c).prefix(11))
            }
            let length = text.count
            return length < 11 ? text + String(repeating: " ", count: 11 - length) : text
        }

        /// Whole local days between `then`'s day and today (0 today, 1 yesterday); nil for a
        /// day after today.
        func daysBefore(_ then: tm) -> Int? {
            var day = then
            (day.tm_hour, day.tm_min, day.tm_sec, day.tm_isdst) = (0, 0, 0, -1)
            let start = Int(mktime(&day))
            // Rounded: a day of a change to or from summer time is 23 or 25 hours long.
            let days = Int((Double(midnight - start) / 86_400).rounded())
            return days >= 0 ? days : nil
        }
    }

    static func pad(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }

    static func local(_ date: Date) -> tm {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var result = tm()
        localtime_r(&seconds, &result)
        return result
    }
}
