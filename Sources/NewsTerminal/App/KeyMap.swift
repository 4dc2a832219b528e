/// What a key does, independent of which key it is.
public enum Command: Sendable, Hashable {
    case nextScreen, previousScreen
    case show(ScreenID)
    case help, quit, reconnect
    case switchBell, switchDesktop
    case up, down, left, right, pageUp, pageDown, halfPageUp, halfPageDown, top, bottom
    case toggle, subscribe, send, toggleAll
    /// Esc outside a field or box: back (to the message, to every message).
    case cancel
    case search, nextMatch, previousMatch, chooseFilter, open
    case nextUnread, previousUnread, toggleRead, markShownRead, delete, undo
    /// The Log newest or oldest first.
    case toggleOrder
    /// The deleted view of the log: open it, or leave it.
    case deletedView
    /// Open a link of the message, copy it or a link (OSC 52), pipe it to a command.
    case openLink, copy, pipe
}

/// One line of the key map: the keys, what they do, where, and whether the footer shows it.
public struct KeyBinding: Sendable, Hashable {
    public let keys: [Key]
    /// How the keys are written in the footer and the help overlay.
    public let label: String
    public let command: Command
    public let summary: String
    /// The footer's shorter words for it.
    public let hint: String
    /// Screens where it applies; empty for everywhere.
    public let screens: Set<ScreenID>
    public let inFooter: Bool

    init(
        _ keys: [Key], _ label: String, _ command: Command, _ summary: String, hint: String? = nil,
        on screens: Set<ScreenID> = [],
        footer: Bool = false
    ) {
        self.keys = keys
        self.label = label
        self.command = command
        self.summary = summary
        self.hint = hint ?? summary
        self.screens = screens
        self.inFooter = footer
    }

    /// The same binding on other keys, written `label`.
    func with(keys: [Key], label: String) -> KeyBinding {
        KeyBinding(keys, label, command, summary, hint: hint, on: screens, footer: inFooter)
    }
}

/// The key map: the single source of key handling, the footer hints and the help overlay.
/// `standard` is the program's; `config.json` makes another from it (`binding(_:to:)`).
public struct KeyMap: Sendable, Hashable {
    public private(set) var bindings: [KeyBinding]

    /// The standard key map's bindings (the manual's key table).
    public static var bindings: [KeyBinding] { standard.bindings }

    public static let standard = KeyMap(bindings: [
        KeyBinding([.tab], "Tab", .nextScreen, "next screen", hint: "screens", footer: true),
        KeyBinding([.backTab], "S-Tab", .previousScreen, "previous screen"),
        KeyBinding([.character("1")], "1", .show(.categories), "Categories screen"),
        KeyBinding([.character("2")], "2", .show(.compose), "Compose screen"),
        KeyBinding([.character("3")], "3", .show(.log), "Log screen"),
        KeyBinding([.character("b")], "b", .switchBell, "bell on arrival, on/off"),
        KeyBinding([.character("d")], "d", .switchDesktop, "desktop notice, on/off"),
        KeyBinding([.up, .character("k")], "↑/k", .up, "move up", hint: "up", footer: true),
        KeyBinding([.down, .character("j")], "↓/j", .down, "move down", hint: "down", footer: true),
        KeyBinding(
            [.character(" "), .enter], "Space/Enter", .toggle, "toggle, or press Subscribe", hint: "toggle",
            on: [.categories], footer: true),
        KeyBinding(
            [.character("s")], "s", .subscribe, "save and subscribe", hint: "subscribe", on: [.categories],
            footer: true),
        KeyBinding([.left], "←", .left, "previous category box", on: [.compose]),
        KeyBinding([.right], "→", .right, "next category box", on: [.compose]),
        KeyBinding(
            [.character(" ")], "Space", .toggle, "check or uncheck the category ([All]: all of them, or none)", hint: "check",
            on: [.compose]),
        KeyBinding([], "", .toggleAll, "check all categories, or none", on: [.compose]),
        KeyBinding(
            [.enter], "Enter", .send, "send (from the message too); on a result, explain it or show the error",
            hint: "send", on: [.compose]),
        KeyBinding([.escape], "Esc", .cancel, "back to the message", on: [.compose]),
        KeyBinding([.pageUp, .control("b")], "PgUp/Ctrl-B", .pageUp, "page up", on: [.log]),
        KeyBinding([.pageDown, .control("f")], "PgDn/Ctrl-F", .pageDown, "page down", on: [.log]),
        KeyBinding([.control("u")], "Ctrl-U", .halfPageUp, "half a page up", on: [.log]),
        KeyBinding([.control("d")], "Ctrl-D", .halfPageDown, "half a page down", on: [.log]),
        KeyBinding([.character("g"), .home], "g", .top, "first category", on: [.categories]),
        KeyBinding([.character("G"), .end], "G", .bottom, "last category", on: [.categories]),
        KeyBinding([.character("g"), .home], "g", .top, "first message (the newest, newest first)", on: [.log]),
        KeyBinding([.character("G"), .end], "G", .bottom, "last message", on: [.log]),
        KeyBinding(
            [.character("O")], "O", .toggleOrder, "newest or oldest first (by the time sent)", hint: "order", on: [.log]),
        KeyBinding(
            [.character("/")], "/", .search, "search as you type (any case, any accent)", hint: "search", on: [.log],
            footer: true),
        KeyBinding([.character("n")], "n", .nextMatch, "next match", hint: "match", on: [.log], footer: true),
        KeyBinding([.character("N")], "N", .previousMatch, "previous match", on: [.log]),
        KeyBinding(
            [.character("l"), .character("c")], "l/c", .chooseFilter,
            "limit what is shown: the unread, the search's matches, a category (combined)", hint: "limit", on: [.log],
            footer: true),
        KeyBinding([.escape], "Esc", .cancel, "every message again (no limit, no search)", on: [.log]),
        KeyBinding([.enter], "Enter", .open, "show the whole message", on: [.log]),
        KeyBinding(
            [.character(" ")], "Space", .nextUnread, "next unread message, in the order shown", hint: "next unread",
            on: [.log], footer: true),
        KeyBinding([.character("p")], "p", .previousUnread, "previous unread message", on: [.log]),
        KeyBinding([.character("u")], "u", .toggleRead, "mark the message read or unread", on: [.log]),
        KeyBinding([.character("A")], "A", .markShownRead, "mark every message shown read (z undoes)", on: [.log]),
        KeyBinding([.character("x"), .delete], "x/Del", .delete, "delete the message (z undoes)", on: [.log]),
        KeyBinding([.character("z")], "z", .undo, "undo x or A, newest first (this window's last 1,000)", on: [.log]),
        KeyBinding([.character("D")], "D", .deletedView, "deleted view: u or Enter restores, D or Esc leaves", on: [.log]),
        KeyBinding(
            [.character("o")], "o", .openLink, "open a link of the message in the browser (a choice when several)",
            hint: "open link", on: [.log]),
        KeyBinding([.character("y")], "y", .copy, "copy the message or one of its links to the clipboard", on: [.log]),
        KeyBinding([.character("|")], "|", .pipe, "pipe the message to a command", on: [.log]),
        KeyBinding([.character("r")], "r", .reconnect, "try the hub again now (starts a stopped local hub)"),
        KeyBinding([.character("?")], "?", .help, "this help", hint: "help", footer: true),
        KeyBinding(
            [.character("q")], "q", .quit, "quit (Ctrl-C too)", hint: "quit", footer: true),
    ])

    /// The command of a key on a screen; screen-specific bindings win.
    public func command(for key: Key, on screen: ScreenID) -> Command? {
        bindings.first { $0.screens.contains(screen) && $0.keys.contains(key) }?.command
            ?? bindings.first { $0.screens.isEmpty && $0.keys.contains(key) }?.command
    }

    /// The standard key map's command of a key on a screen.
    public static func command(for key: Key, on screen: ScreenID) -> Command? { standard.command(for: key, on: screen) }

    /// The footer hints of a screen, its own keys first (a narrow footer keeps them, and
    /// drops the ones of every screen); a command without keys has none.
    public func footer(for screen: ScreenID) -> [(label: String, summary: String)] {
        let shown = bindings.filter { $0.inFooter && !$0.keys.isEmpty }
        return (shown.filter { $0.screens.contains(screen) } + shown.filter(\.screens.isEmpty)).map { ($0.label, $0.hint) }
    }

    /// The keys of `command` as the footer writes them ("" when it has none): a screen's own
    /// binding first.
    public func label(of command: Command, on screen: ScreenID? = nil) -> String {
        let candidates = bindings.filter { $0.command == command && !$0.keys.isEmpty }
        return (candidates.first { screen.map($0.screens.contains) ?? false } ?? candidates.first)?.label ?? ""
    }

    /// `keys` for `command` (wherever it applies) in place of its keys; each of them leaves
    /// whatever other command had it. No keys: the command is unbound.
    public func binding(_ keys: [Key], to command: Command) -> KeyMap {
        var map = self
        map.bindings = bindings.map { binding in
            if binding.command == command {
                return binding.with(keys: keys, label: keys.map(KeyName.label).joined(separator: "/"))
            }
            let kept = binding.keys.filter { !keys.contains($0) }
            guard kept != binding.keys else { return binding }
            return binding.with(keys: kept, label: kept.map(KeyName.label).joined(separator: "/"))
        }
        return map
    }

    /// The map without single-letter keys (`"letterKeys": false`): a command keeps its other
    /// keys (arrows, Enter, Del, digits, `/`, `?`) and has none left when it had only a letter.
    public var withoutLetterKeys: KeyMap {
        var map = self
        map.bindings = bindings.map { binding in
            let kept = binding.keys.filter { if case .character(let c) = $0 { return !c.isLetter } else { return true } }
            guard kept != binding.keys else { return binding }
            return binding.with(keys: kept, label: kept.map(KeyName.label).joined(separator: "/"))
        }
        return map
    }

    /// Help lines of the standard key map.
    public static var helpLines: [(label: String, summary: String, scope: String)] { standard.helpLines }

    /// Help lines: the keys of every screen, then the text field's own; a command without
    /// keys is left out.
    public var helpLines: [(label: String, summary: String, scope: String)] {
        let bindings = self.bindings.filter { !$0.keys.isEmpty }
        let global = bindings.filter(\.screens.isEmpty).map { ($0.label, $0.summary, "everywhere") }
        let local = ScreenID.allCases.flatMap { screen in
            bindings.filter { $0.screens.contains(screen) }.map { ($0.label, $0.summary, screen.title) }
        }
        let field = Self.textFieldKeys.map { ($0.0, $0.1, "message field") }
        return global + local + field
    }

    /// Keys of the compose screen's text field, which takes every printable key itself.
    public static let textFieldKeys: [(String, String)] = [
        ("letters", "text, on the category row too (q)"), ("Enter", "send"),
        ("Alt-Enter", "a new line (a paste keeps its lines)"), ("←/→", "move the cursor"),
        ("↑/↓", "the row above / below; ↑ on the first row recalls the last send, ↓ on the last leaves the field"),
        ("Ctrl-P/Ctrl-N", "an earlier / a later send (the last 100 of this home)"),
        ("Ctrl-X Ctrl-E", "write the message in $VISUAL or $EDITOR"),
        ("Home/End", "start / end of the row (Ctrl-A / Ctrl-E)"), ("Backspace/Del", "delete"),
        ("Alt-B/Alt-F", "a word left / right"), ("Ctrl-W", "delete the word before"), ("Alt-D", "delete the word after"),
        ("Ctrl-U", "delete to the start of the line"), ("Ctrl-K", "delete to the end of the line"),
        ("Esc", "leave the field"),
    ]
}
