/// The colours of the UI's roles (`Style.Color`), as curses colour numbers (-1: the
/// terminal's own). `standard` is made for a dark background; `light` for a light one, where
/// cyan and yellow text can hardly be read: blue and magenta instead. `NO_COLOR` wins over
/// either: no colour at all.
public struct ColorScheme: Sendable, Hashable {
    public let name: String
    public let accent: Int16
    public let good: Int16
    public let warning: Int16
    public let bad: Int16

    /// Curses' colour numbers (COLOR_BLACK … COLOR_WHITE).
    public enum Curses {
        public static let red: Int16 = 1, green: Int16 = 2, yellow: Int16 = 3, blue: Int16 = 4, magenta: Int16 = 5,
            cyan: Int16 = 6
    }

    public static let standard = ColorScheme(
        name: "default", accent: Curses.cyan, good: Curses.green, warning: Curses.yellow, bad: Curses.red)
    public static let light = ColorScheme(
        name: "light", accent: Curses.blue, good: Curses.green, warning: Curses.magenta, bad: Curses.red)

    static let all = [standard, light]
    static var names: [String] { all.map(\.name) }

    static func named(_ name: String) -> ColorScheme? { all.first { $0.name == name } }

    /// The curses colour of `role`; nil for the terminal's own.
    public func color(of role: Style.Color) -> Int16? {
        switch role {
        case .accent: return accent
        case .good: return good
        case .warning: return warning
        case .bad: return bad
        case .normal, .muted: return nil
        }
    }

    /// One letter per colour, for tests and goldens: `.` for the terminal's own.
    public static func letter(_ color: Int16?) -> Character {
        switch color {
        case Curses.red?: return "r"
        case Curses.green?: return "g"
        case Curses.yellow?: return "y"
        case Curses.blue?: return "b"
        case Curses.magenta?: return "m"
        case Curses.cyan?: return "c"
        default: return "."
        }
    }
}
