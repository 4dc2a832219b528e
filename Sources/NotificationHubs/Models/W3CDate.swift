import Foundation

/// W3C/ISO-8601 dates as the service and its SDKs write them: `2018-11-07T16:18:32.6641371-08:00`,
/// `9999-12-31T23:59:59.9999999Z`, iOS's `2025-01-31T10:20+0000`, .NET's `11/07/2018 16:18:32`.
public enum W3CDate {
    /// What the service returns for "never expires".
    public static let never = "9999-12-31T23:59:59.9999999Z"

    /// Parses the forms above; `nil` when the text is none of them.
    public static func parse(_ text: String) -> Date? {
        // Foundation's trimming (bridged through NSString) only when an end could be blank.
        let bytes = text.utf8
        let plain = bytes.first.map { $0 > 0x20 && $0 < 0x80 } == true && bytes.last.map { $0 > 0x20 && $0 < 0x80 } == true
        let s = Array(plain ? bytes : text.trimmingCharacters(in: .whitespaces).utf8)
        if s.count >= 10, s[2] == UInt8(ascii: "/"), s[5] == UInt8(ascii: "/") {
            return parseDotNet(s)
        }
        var i = 0
        func number(_ width: Int) -> Int? {
            guard i + width <= s.count else { return nil }
            var value = 0
            for k in i..<(i + width) {
                guard s[k] >= UInt8(ascii: "0"), s[k] <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(s[k] - UInt8(ascii: "0"))
            }
            i += width
            return value
        }
        func expect(_ c: Character) -> Bool {
            guard i < s.count, s[i] == c.asciiValue! else { return false }
            i += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2) else { return nil }
        var hour = 0
        var minute = 0
        var second = 0
        var fraction = 0.0
        var offset = 0
        if i < s.count {
            guard expect("T") || expect(" "), let h = number(2), expect(":"), let m = number(2) else { return nil }
            hour = h
            minute = m
            if expect(":") {
                guard let sec = number(2) else { return nil }
                second = sec
                if expect(".") {
                    var scale = 0.1
                    let start = i
                    while i < s.count, s[i] >= UInt8(ascii: "0"), s[i] <= UInt8(ascii: "9") {
                        fraction += Double(s[i] - UInt8(ascii: "0")) * scale
                        scale /= 10
                        i += 1
                    }
                    guard i > start else { return nil }
                }
            }
            if expect("Z") || expect("z") {
                offset = 0
            } else if i < s.count, s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") {
                let sign = s[i] == UInt8(ascii: "-") ? -1 : 1
                i += 1
                guard let oh = number(2) else { return nil }
                _ = expect(":")
                guard let om = number(2) else { return nil }
                offset = sign * (oh * 3600 + om * 60)
            }
            guard i == s.count else { return nil }
        }
        return makeDate(
            year: year, month: month, day: day, hour: hour, minute: minute, second: second, fraction: fraction, offset: offset)
    }

    private static func parseDotNet(_ s: [UInt8]) -> Date? {
        // MM/dd/yyyy HH:mm:ss, local time of the sender is unknown: read as UTC.
        let text = String(decoding: s, as: UTF8.self)
        let parts = text.split(whereSeparator: { $0 == "/" || $0 == " " || $0 == ":" }).map { Int($0) }
        guard parts.count == 6, parts.allSatisfy({ $0 != nil }) else { return nil }
        let p = parts.map { $0! }
        return makeDate(year: p[2], month: p[0], day: p[1], hour: p[3], minute: p[4], second: p[5], fraction: 0, offset: 0)
    }

    private static func makeDate(
        year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, fraction: Double, offset: Int
    )
        -> Date?
    {
        // Years as the service writes them (0001 to 9999): a larger one, which the .NET form
        // reads with any number of digits, would overflow the arithmetic below.
        guard (1...9999).contains(year), (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour),
            (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = Double(days * 86_400 + hour * 3600 + minute * 60 + second - offset) + fraction
        return Date(timeIntervalSince1970: seconds)
    }

    /// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Formats as the service does: `yyyy-MM-ddTHH:mm:ss.fffffffZ` in UTC.
    public static func format(_ date: Date) -> String {
        let total = date.timeIntervalSince1970
        var seconds = Int(total.rounded(.down))
        var ticks = Int(((total - Double(seconds)) * 10_000_000).rounded())
        if ticks >= 10_000_000 {
            seconds += 1
            ticks -= 10_000_000
        }
        var days = seconds / 86_400
        var rest = seconds % 86_400
        if rest < 0 {
            rest += 86_400
            days -= 1
        }
        let (y, m, d) = civilFromDays(days)
        if (0...9999).contains(y) {
            let fields = [(y, 4), (m, 2), (d, 2), (rest / 3600, 2), (rest % 3600 / 60, 2), (rest % 60, 2), (ticks, 7)]
            return fixedWidth(fields: fields)
        }
        func pad(_ v: Int, _ w: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, w - s.count)) + s
        }
        return
            "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(rest / 3600, 2)):\(pad(rest % 3600 / 60, 2)):\(pad(rest % 60, 2)).\(pad(ticks, 7))Z"
    }

    /// `format` for years 0 to 9999, every field a fixed number of digits: written into one
    /// string's storage, without a string per field (a PUT stamps every installation).
    private static func fixedWidth(fields: [(value: Int, width: Int)]) -> String {
        String(unsafeUninitializedCapacity: 28) { buffer in
            let separators: [UInt8] = Array("--T::.Z".utf8)
            var at = 0
            for (index, field) in fields.enumerated() {
                var value = field.value
                for position in stride(from: at + field.width - 1, through: at, by: -1) {
                    buffer[position] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
                at += field.width
                buffer[at] = separators[index]
                at += 1
            }
            return at
        }
    }

    static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }

    /// Normalises a date string to the service's form; "never" and dates past year 9998 stay
    /// as `never`. `nil` when it does not parse.
    public static func normalize(_ text: String) -> String? {
        if text == never { return never }
        guard let date = parse(text) else { return nil }
        if date.timeIntervalSince1970 >= 253_370_764_800 { return never }  // 9999-01-01
        return format(date)
    }
}
