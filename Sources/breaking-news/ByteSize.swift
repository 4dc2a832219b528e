import ArgumentParser

/// A size as the hub's flags take it: a number of bytes with a unit, `K`, `M` or `G`
/// (1,024 each; `64K`, `4M`); a bare number is bytes.
struct ByteSize: ExpressibleByArgument, Sendable, Equatable, CustomStringConvertible {
    let bytes: Int

    init(bytes: Int) { self.bytes = bytes }

    init?(argument: String) {
        let units: [Character: Int] = ["k": 1 << 10, "m": 1 << 20, "g": 1 << 30]
        var text = Substring(argument)
        var unit = 1
        if let last = text.last?.lowercased().first, let factor = units[last] {
            unit = factor
            text = text.dropLast()
        }
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(text),
            value <= (1 << 40) / unit
        else { return nil }
        bytes = value * unit
    }

    var description: String {
        for (unit, size) in [("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)] where bytes >= size && bytes % size == 0 {
            return "\(bytes / size)\(unit)"
        }
        return "\(bytes)"
    }

    var defaultValueDescription: String { description }
}
