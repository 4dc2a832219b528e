import NotificationHubs

/// How the terminal UI tells the user that news arrived while they work elsewhere: a terminal
/// bell, a desktop notification, both or neither (the default). Kept in `defaults.json` as
/// `"arrivalAlerts": {"bell": true, "desktop": false}`.
public struct ArrivalAlerts: Sendable, Hashable {
    public var bell: Bool
    public var desktop: Bool

    public init(bell: Bool = false, desktop: Bool = false) {
        self.bell = bell
        self.desktop = desktop
    }

    /// Neither: how a home starts, and what a defaults file without the key means.
    public static let off = ArrivalAlerts()

    public var isOff: Bool { !bell && !desktop }

    /// One of the two switches.
    public enum Switch: Sendable, Hashable {
        case bell, desktop
    }

    /// Whether the switch `kind` is on.
    public subscript(_ kind: Switch) -> Bool {
        get { kind == .bell ? bell : desktop }
        set {
            if kind == .bell { bell = newValue } else { desktop = newValue }
        }
    }

    var json: JSONValue { .object([("bell", .bool(bell)), ("desktop", .bool(desktop))]) }

    /// Reads the stored form; anything else (a missing member, another type) is off.
    init(json: JSONValue) {
        func flag(_ key: String) -> Bool {
            if case .bool(let on)? = json[key] { return on }
            return false
        }
        self.init(bell: flag("bell"), desktop: flag("desktop"))
    }
}
