import Foundation

/// What `config.json` (beside the preferences, in the config folder) changes: key bindings,
/// the colours, and whether links are drawn as OSC 8 hyperlinks. Every entry is checked on
/// its own: a bad one is refused with the file, the entry and the reason, and what it would
/// have changed stays as it is by default; the good ones apply.
///
/// ```json
/// {
///   "keys": { "quit": ["x", "q"], "down": ["J", "Down"], "up": ["K", "Up"], "delete": [] },
///   "colors": "light",
///   "hyperlinks": "auto",
///   "letterKeys": true,
///   "confirmQuit": false,
///   "order": "newest",
///   "copyCommand": "wl-copy"
/// }
/// ```
public struct UserConfig: Sendable, Hashable {
    public var keyMap = KeyMap.standard
    public var colors = ColorScheme.standard
    public var hyperlinks = Hyperlinks.auto
    /// `"confirmQuit": true`: q asks before it quits.
    public var confirmQuit = false
    /// `"order": "oldest"`: the Log lists the oldest message first when a window opens (`O`
    /// turns it round).
    public var order = LogOrder.newestFirst
    /// `"copyCommand": "xclip -selection clipboard"`: what `y` runs (with `/bin/sh -c`, the text
    /// on its standard input) in place of tmux's buffer or OSC 52.
    public var copyCommand: String?
    /// The settings there are.
    static let settings = ["keys", "colors", "hyperlinks", "letterKeys", "confirmQuit", "order", "copyCommand"]
    /// Each refused entry: "FILE: ENTRY: REASON".
    public var problems: [String] = []

    public init() {}

    /// The settings of the file at `url`; no file, the defaults.
    public static func load(from url: URL) -> UserConfig {
        guard FileManager.default.fileExists(atPath: url.path) else { return UserConfig() }
        guard let data = try? Data(contentsOf: url), data.count <= 1_048_576 else {
            var config = UserConfig()
            config.problems = ["\(url.path): cannot be read (or is over 1 MB): every setting is the default"]
            return config
        }
        return parse(data, file: url.path)
    }

    /// The settings `data` holds; `file` names it in the problems.
    public static func parse(_ data: Data, file: String) -> UserConfig {
        var config = UserConfig()
        func refuse(_ entry: String, _ reason: String) { config.problems.append("\(file): \(entry): \(reason)") }
        guard let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? [String: Any]
        else {
            config.problems.append("\(file): not a JSON object: every setting is the default")
            return config
        }
        for name in object.keys.sorted() where !settings.contains(name) {
            refuse(name, "unknown setting (the settings are \(settings.joined(separator: ", ")))")
        }
        /// JSON's true or false (a number, 0 or 1, is not one).
        func flag(_ name: String) -> Bool? {
            guard let value = object[name] else { return nil }
            guard let number = value as? NSNumber, String(cString: number.objCType) == "c" else {
                refuse(name, "must be true or false")
                return nil
            }
            return number.boolValue
        }
        config.confirmQuit = flag("confirmQuit") ?? false
        if let order = object["order"] {
            if let name = order as? String, let value = LogOrder(rawValue: name) {
                config.order = value
            } else {
                refuse("order", "must be \"newest\" or \"oldest\"")
            }
        }
        if let copy = object["copyCommand"] {
            if let command = (copy as? String)?.trimmingCharacters(in: .whitespaces), !command.isEmpty,
                command.count <= 1_000, !command.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
            {
                config.copyCommand = command
            } else {
                refuse("copyCommand", "must be a command line (\"wl-copy\", \"xclip -selection clipboard\"), one line")
            }
        }
        // Before the keys: a letter the file binds to an action is the user's own choice.
        if flag("letterKeys") == false { config.keyMap = config.keyMap.withoutLetterKeys }
        if let colors = object["colors"] {
            if let name = colors as? String, let scheme = ColorScheme.named(name) {
                config.colors = scheme
            } else {
                refuse("colors", "must be \(ColorScheme.names.map { "\"\($0)\"" }.joined(separator: " or "))")
            }
        }
        if let hyperlinks = object["hyperlinks"] {
            if let value = Hyperlinks(json: hyperlinks) {
                config.hyperlinks = value
            } else {
                refuse("hyperlinks", "must be true, false or \"auto\"")
            }
        }
        if let keys = object["keys"] {
            guard let table = keys as? [String: Any] else {
                refuse("keys", "must be an object of actions, each with a list of keys")
                return config
            }
            // Keys already given to an action in this file: a second action for one is refused.
            var taken: [Key: String] = [:]
            for action in table.keys.sorted() {
                let entry = "keys.\(action)"
                guard let command = KeyActions.command(named: action) else {
                    refuse(entry, "no such action (the actions are in the manual's key table)")
                    continue
                }
                let names: [String]
                if let one = table[action] as? String {
                    names = [one]
                } else if let list = table[action] as? [Any], list.allSatisfy({ $0 is String }) {
                    names = list.compactMap { $0 as? String }
                } else {
                    refuse(entry, "must be a key name or a list of them ([] unbinds)")
                    continue
                }
                var keys: [Key] = []
                var refused = false
                for name in names {
                    guard let key = KeyName.parse(name) else {
                        refuse(entry, "“\(name)” is not a key name (a character, or Up, Down, PgUp, Enter, Esc, Ctrl-X…)")
                        refused = true
                        break
                    }
                    if let other = taken[key], other != action {
                        refuse(entry, "“\(name)” is bound to \(other) already")
                        refused = true
                        break
                    }
                    if !keys.contains(key) { keys.append(key) }
                }
                guard !refused else { continue }
                for key in keys { taken[key] = action }
                config.keyMap = config.keyMap.binding(keys, to: command)
            }
        }
        return config
    }
}

/// The names `config.json` gives the actions of the key map.
public enum KeyActions {
    public static let names: [(String, Command)] = [
        ("next-screen", .nextScreen), ("previous-screen", .previousScreen), ("categories-screen", .show(.categories)),
        ("compose-screen", .show(.compose)), ("log-screen", .show(.log)), ("help", .help), ("quit", .quit),
        ("reconnect", .reconnect), ("bell", .switchBell), ("desktop", .switchDesktop), ("up", .up), ("down", .down),
        ("left", .left), ("right", .right), ("page-up", .pageUp), ("page-down", .pageDown),
        ("half-page-up", .halfPageUp), ("half-page-down", .halfPageDown), ("top", .top),
        ("bottom", .bottom), ("toggle", .toggle), ("subscribe", .subscribe), ("send", .send), ("check-all", .toggleAll),
        ("back", .cancel), ("search", .search), ("next-match", .nextMatch), ("previous-match", .previousMatch),
        ("limit", .chooseFilter), ("filter", .chooseFilter), ("show-message", .open), ("next-unread", .nextUnread),
        ("previous-unread", .previousUnread), ("order", .toggleOrder), ("toggle-read", .toggleRead),
        ("mark-shown-read", .markShownRead), ("delete", .delete), ("undo", .undo), ("deleted-view", .deletedView),
        ("open-link", .openLink), ("copy", .copy), ("pipe", .pipe),
    ]

    public static func command(named name: String) -> Command? { names.first { $0.0 == name }?.1 }

    public static func name(of command: Command) -> String? { names.first { $0.1 == command }?.0 }
}

/// Whether URLs are drawn as OSC 8 hyperlinks.
public enum Hyperlinks: Sendable, Hashable {
    case on, off
    /// On, except inside tmux older than 3.4 (3.3 drops OSC 8; 3.4 forwards it) or GNU
    /// screen, and on the Linux console, which know nothing of them.
    case auto

    init?(json: Any) {
        if let number = json as? NSNumber, String(cString: number.objCType) == "c" {
            // JSON's true and false (a number, 0 or 1, is not one).
            self = number.boolValue ? .on : .off
        } else if json as? String == "auto" {
            self = .auto
        } else {
            return nil
        }
    }

    /// Whether links are drawn as hyperlinks in `environment`.
    public func enabled(in environment: [String: String]) -> Bool {
        switch self {
        case .on: return true
        case .off: return false
        case .auto:
            let term = environment["TERM"] ?? ""
            if term == "linux" { return false }
            if !(environment["TMUX"] ?? "").isEmpty {
                // tmux says its version in TERM_PROGRAM_VERSION ("3.3a", "3.4", "next-3.5").
                guard environment["TERM_PROGRAM"] == "tmux", let version = environment["TERM_PROGRAM_VERSION"] else {
                    return false
                }
                let digits = version.drop { !$0.isNumber }.split(separator: ".").prefix(2).map {
                    Int($0.prefix { $0.isNumber }) ?? 0
                }
                return (digits.first ?? 0, digits.dropFirst().first ?? 0) >= (3, 4)
            }
            if !(environment["STY"] ?? "").isEmpty || term.hasPrefix("screen") { return false }
            return true
        }
    }
}
