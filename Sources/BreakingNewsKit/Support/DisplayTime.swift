import Foundation
import NotificationHubs

/// Times as people read them in a terminal.
public enum DisplayTime {
    /// Local `HH:mm:ss` for today, `yyyy-MM-dd HH:mm` otherwise; the text itself when it is
    /// not a W3C date.
    public static func short(_ w3c: String, now: Date = Date()) -> String {
        guard let date = W3CDate.parse(w3c) else { return w3c }
        let formatter = DateFormatter()
        formatter.dateFormat = Calendar.current.isDate(date, inSameDayAs: now) ? "HH:mm:ss" : "yyyy-MM-dd HH:mm"
        return formatter.string(from: date)
    }
}
