/// A key press, as the app understands it.
public enum Key: Sendable, Hashable {
    case character(Character)
    case up, down, left, right
    case home, end, pageUp, pageDown
    case backspace, delete
    case enter, tab, backTab, escape
    /// Ctrl with a letter (`ctrl("u")`).
    case control(Character)
    /// Alt (Meta) with a character: the terminal sends ESC before it.
    case alt(Character)
    /// A mouse click at a cell.
    case click(row: Int, column: Int)
    /// Text the terminal pasted (bracketed paste): text, never keys, line feeds included.
    case paste(String)
    /// Two or more printable keys found waiting at once (`\n` for Enter, `\t` for Tab),
    /// without bracketed paste: a paste most likely, or keys typed ahead while the program
    /// was busy. A text field takes it as text; anywhere else it is set aside, never commands
    /// (`AppState.handleBurst`).
    case burst(String)
}

/// How a run of text is drawn. Colours are used only when the terminal has them and
/// `NO_COLOR` is not set.
public struct Style: Sendable, Hashable {
    public enum Color: Sendable, Hashable {
        case normal, accent, good, warning, bad, muted
    }

    public var bold = false
    public var reverse = false
    public var underline = false
    public var dim = false
    public var color: Color = .normal

    public init(bold: Bool = false, reverse: Bool = false, underline: Bool = false, dim: Bool = false, color: Color = .normal) {
        self.bold = bold
        self.reverse = reverse
        self.underline = underline
        self.dim = dim
        self.color = color
    }

    public static let plain = Style()
}

/// Where a screen is drawn: the curses terminal, or a virtual one in tests.
public protocol Terminal: AnyObject {
    /// Rows and columns.
    var size: (rows: Int, columns: Int) { get }
    /// Starts a new frame.
    func clear()
    /// Draws `text` at a cell; the caller has clipped it to fit.
    func draw(_ text: String, row: Int, column: Int, style: Style)
    /// Shows the cursor at a cell, or hides it.
    func placeCursor(row: Int, column: Int, visible: Bool)
    /// Makes the frame visible.
    func present()
    /// The next key, waiting at most `milliseconds`; `nil` on timeout. A resize is reported
    /// through `size` changing.
    func readKey(milliseconds: Int) -> Key?
    /// True once the terminal went away (its window closed): the app must end.
    var isClosed: Bool { get }
    /// Writes an alert's sequences (a bell, a desktop notification: `AlertSequence`) straight
    /// to the terminal, after the frame it follows is presented.
    func alert(_ bytes: String)
    /// Makes `url`, drawn at a cell in this frame, a hyperlink (OSC 8) where the terminal and
    /// the settings have them; nothing otherwise.
    func link(_ url: String, row: Int, column: Int)
    /// Gives the terminal to `body` (a browser, a command the user typed) and takes it back
    /// after, the screen drawn anew by the next frame.
    func suspend(_ body: () -> Void)
}
