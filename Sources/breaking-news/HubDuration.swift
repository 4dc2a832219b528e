import ArgumentParser

/// A duration as every flag of the hub takes it: a number with a unit, `s`, `m`, `h` or
/// `d` (`90s`, `15m`, `12h`, `7d`); a bare number is seconds.
struct HubDuration: ExpressibleByArgument, Sendable, Equatable, CustomStringConvertible {
    let seconds: Double

    init(seconds: Double) { self.seconds = seconds }

    init?(argument: String) {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var text = Substring(argument)
        var unit = 1.0
        if let last = text.last, let factor = units[last] {
            unit = factor
            text = text.dropLast()
        }
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let value = Double(text),
            value.isFinite, value >= 0, value * unit <= 100 * 365 * 86_400
        else { return nil }
        seconds = value * unit
    }

    var description: String {
        for (unit, size) in [("d", 86_400.0), ("h", 3600), ("m", 60)]
        where seconds >= size && seconds.truncatingRemainder(dividingBy: size) == 0 {
            return "\(Int(seconds / size))\(unit)"
        }
        return seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s"
    }

    var defaultValueDescription: String { description }
}
