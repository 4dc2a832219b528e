import Foundation
import NotificationHubs

/// Times as people read them in a terminal, in local time. Formatted by hand with
/// `localtime_r`: a DateFormatter would load ICU into every terminal for two fields.
public enum DisplayTime {
    /// Local `HH:mm:ss` for today, `yyyy-MM-dd HH:mm` otherwise; the text itself when it is
    /// not a W3C date.
    public static func short(_ w3c: String, now: Date = Date()) -> String {
        guard let date = W3CDate.parse(w3c) else { return w3c }
        let then = local(date)
        let today = local(now)
        func pad(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        if then.tm_year == today.tm_year && then.tm_yday == today.tm_yday {
            return "\(pad(then.tm_hour)):\(pad(then.tm_min)):\(pad(then.tm_sec))"
        }
        return "\(then.tm_year + 1900)-\(pad(then.tm_mon + 1))-\(pad(then.tm_mday)) \(pad(then.tm_hour)):\(pad(then.tm_min))"
    }

    /// The time column of a list: 11 cells whatever the day, so rows of other days do not
    /// shift the columns after it. `HH:mm:ss` for today, `MM-dd HH:mm` this year, else
    /// `yyyy-MM-dd`; the text itself (cut to 11) when it is not a W3C date.
    public static func column(_ w3c: String, now: Date = Date()) -> String {
        TimeColumn(now: now).text(w3c)
    }

    /// The time column against one `now`, whose day is worked out once for a whole list.
    public struct TimeColumn: Sendable {
        /// Today's year and day of the year, local time.
        private let year: Int32
        private let day: Int32

        public init(now: Date) {
            let today = DisplayTime.local(now)
            (year, day) = (today.tm_year, today.tm_yday)
        }

        /// The column of `w3c` (see `DisplayTime.column`).
        public func text(_ w3c: String) -> String {
            let text: String
            if let date = W3CDate.parse(w3c) {
                let then = DisplayTime.local(date)
                func pad(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
                if then.tm_year == year && then.tm_yday == day {
                    text = "\(pad(then.tm_hour)):\(pad(then.tm_min)):\(pad(then.tm_sec))"
                } else if then.tm_year == year {
                    text = "\(pad(then.tm_mon + 1))-\(pad(then.tm_mday)) \(pad(then.tm_hour)):\(pad(then.tm_min))"
                } else {
                    text = "\(then.tm_year + 1900)-\(pad(then.tm_mon + 1))-\(pad(then.tm_mday))"
                }
            } else {
                text = String(w3c.prefix(11))
            }
            let length = text.count
            return length < 11 ? text + String(repeating: " ", count: 11 - length) : text
        }
    }

    fileprivate static func local(_ date: Date) -> tm {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var result = tm()
        localtime_r(&seconds, &result)
        return result
    }
}
