import Foundation

/// A scheduled send's `ServiceBusNotification-ScheduleTime`, read strictly in the forms the
/// SDKs send: `yyyy-MM-ddTHH:mm:ss` with an optional fraction of 1 to 7 digits, then `Z`, an
/// offset `±HH:MM` within ±14:00, or nothing (.NET's zone-less form, read as UTC). JavaScript's
/// `toISOString()` (`2026-11-25T18:00:00.000Z`) is one of them. The date must exist (no
/// February 30th), the time of day too (no hour 24, no leap second), in the years 2000 to
/// 9998.
public enum ScheduleTime {
    /// The longest text looked at.
    public static let maximumLength = 40

    /// Why a schedule time was refused, as the end of a sentence about it.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    public static func parse(_ text: String) throws(Refusal) -> Date {
        let s = Array(text.utf8)
        guard s.count <= maximumLength else { throw Refusal("is longer than \(maximumLength) characters") }
        var i = 0
        func digits(_ count: Int) -> Int? {
            guard i + count <= s.count else { return nil }
            var value = 0
            for byte in s[i..<(i + count)] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            i += count
            return value
        }
        func take(_ byte: UInt8) -> Bool {
            guard i < s.count, s[i] == byte else { return false }
            i += 1
            return true
        }
        let shape = "is not a time such as 2026-11-25T18:00:00 (UTC), 2026-11-25T18:00:00.000Z or 2026-11-25T19:00:00+01:00"
        guard let year = digits(4), take(UInt8(ascii: "-")), let month = digits(2), take(UInt8(ascii: "-")),
            let day = digits(2), take(UInt8(ascii: "T")) || take(UInt8(ascii: "t")), let hour = digits(2),
            take(UInt8(ascii: ":")), let minute = digits(2), take(UInt8(ascii: ":")), let second = digits(2)
        else { throw Refusal(shape) }
        var fraction = 0.0
        if take(UInt8(ascii: ".")) {
            var scale = 0.1
            let start = i
            while i < s.count, (0x30...0x39).contains(s[i]) {
                fraction += Double(s[i] - 0x30) * scale
                scale /= 10
                i += 1
            }
            guard (1...7).contains(i - start) else { throw Refusal(shape) }
        }
        var offset = 0
        if take(UInt8(ascii: "Z")) || take(UInt8(ascii: "z")) {
            offset = 0
        } else if i < s.count, s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") {
            let sign = s[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let hours = digits(2), take(UInt8(ascii: ":")), let minutes = digits(2) else { throw Refusal(shape) }
            guard minutes <= 59 else { throw Refusal("has an offset whose minutes are over 59") }
            guard hours * 60 + minutes <= 14 * 60 else {
                throw Refusal("has an offset beyond ±14:00, which no time zone has")
            }
            offset = sign * (hours * 3600 + minutes * 60)
        }
        guard i == s.count else { throw Refusal(shape) }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day) else {
            throw Refusal("names a day that does not exist")
        }
        // Far outside any schedule (7 days ahead, 5 minutes past), and outside what the service
        // can write back once offsets move it.
        guard (2000...9998).contains(year) else { throw Refusal("names a year out of range") }
        guard hour <= 23, minute <= 59, second <= 59 else { throw Refusal("names a time of day that does not exist") }
        let days = W3CDate.daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second - offset) + fraction)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
