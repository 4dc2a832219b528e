import CNcursesw
import Foundation

/// The real terminal, through ncursesw: wide characters in and out, default colours
/// (none when `NO_COLOR` is set), the mouse only when asked for.
public final class CursesTerminal: Terminal {
    private let colors: Bool
    /// The locale is not UTF-8: glyphs are drawn as their ASCII stand-ins.
    private let ascii: Bool
    private var active = true
    /// Keys read with others at once and not handed out yet.
    private var queued: [Key] = []
    /// Reads that failed at once, in a row: a closed terminal answers every read immediately.
    private var immediateFailures = 0
    public private(set) var isClosed = false

    /// Whether links are drawn as OSC 8 hyperlinks.
    private let hyperlinks: Bool
    /// The hyperlinks of the frame being drawn, written after it.
    private var links: [(url: String, row: Int, column: Int)] = []

    /// Takes over the terminal. Call `shutdown()` to give it back.
    public init(
        mouse: Bool = false, colors scheme: ColorScheme = .standard, hyperlinks: Hyperlinks = .off,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        if setlocale(LC_ALL, "") == nil {
            // A UTF-8 locale that is not installed here (often so in containers): the C
            // library's own UTF-8 locale draws the same.
            let asked = ["LC_ALL", "LC_CTYPE", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty } ?? ""
            if asked.uppercased().replacingOccurrences(of: "-", with: "").contains("UTF8") { setlocale(LC_ALL, "C.UTF-8") }
        }
        let codeset = String(cString: nl_langinfo(nl_item(CODESET))).uppercased().replacingOccurrences(of: "-", with: "")
        ascii = codeset != "UTF8"
        self.hyperlinks = !ascii && hyperlinks.enabled(in: environment)
        // Widths are measured as UTF-8 whatever the locale; what is drawn is then only ASCII.
        if ascii { setlocale(LC_CTYPE, "C.UTF-8") }
        if environment["ESCDELAY"] == nil { setenv("ESCDELAY", "25", 1) }
        initscr()
        cbreak()
        noecho()
        nonl()
        keypad(bn_stdscr(), true)
        intrflush(bn_stdscr(), false)
        let noColor = environment["NO_COLOR"].map { !$0.isEmpty } ?? false
        colors = !noColor && bn_has_colors() != 0
        if colors {
            start_color()
            use_default_colors()
            init_pair(1, scheme.accent, -1)
            init_pair(2, scheme.good, -1)
            init_pair(3, scheme.warning, -1)
            init_pair(4, scheme.bad, -1)
        }
        if mouse {
            mousemask(mmask_t(bn_all_mouse_events()), nil)
            mouseinterval(0)
        }
        curs_set(0)
        // Bracketed paste: the terminal wraps a paste in ESC [200~ … ESC [201~, which curses
        // reports as two keys of our own, so a pasted line feed is text, not Enter.
        define_key("\u{1B}[200~", Self.pasteStart)
        define_key("\u{1B}[201~", Self.pasteEnd)
        Self.write("\u{1B}[?2004h")
    }

    private static let pasteStart = bn_key_max() + 1
    private static let pasteEnd = bn_key_max() + 2
    /// The most a paste brings in; the rest is dropped (a send takes at most 1,024 bytes).
    static let pasteLimit = 16_384

    /// Writes a mode sequence straight to the terminal, beside curses' own output.
    private static func write(_ sequence: String) {
        let bytes = Array(sequence.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress, $0.count) }
    }

    /// Restores the terminal; safe to call more than once.
    public func shutdown() {
        guard active else { return }
        active = false
        curs_set(1)
        endwin()
        Self.write("\u{1B}[?2004l")
    }

    deinit { shutdown() }

    public var size: (rows: Int, columns: Int) { (Int(bn_lines()), Int(bn_cols())) }

    public func clear() {
        links = []
        erase()
    }

    public func draw(_ text: String, row: Int, column: Int, style: Style) {
        var attributes: Int32 = 0
        if style.bold { attributes |= bn_attr_bold() }
        if style.reverse { attributes |= bn_attr_reverse() }
        if style.underline { attributes |= bn_attr_underline() }
        if style.dim || style.color == .muted { attributes |= bn_attr_dim() }
        if colors {
            switch style.color {
            case .accent: attributes |= bn_color_pair(1)
            case .good: attributes |= bn_color_pair(2)
            case .warning: attributes |= bn_color_pair(3)
            case .bad: attributes |= bn_color_pair(4)
            case .normal, .muted: break
            }
        }
        attrset(attributes)
        let text = ascii ? ASCIIFallback.ascii(text) : text
        var wide = text.unicodeScalars.map { wchar_t(bitPattern: $0.value) } + [0]
        mvaddwstr(Int32(row), Int32(column), &wide)
        attrset(0)
    }

    public func placeCursor(row: Int, column: Int, visible: Bool) {
        move(Int32(row), Int32(column))
        curs_set(visible ? 1 : 0)
    }

    public func present() {
        refresh()
        guard hyperlinks, !links.isEmpty else { return }
        // Curses cannot hold OSC 8 in its cells: the link's text, drawn already, is written
        // again over itself inside the sequence, the cursor and attributes saved (DECSC) and
        // restored (DECRC) around it, so curses' idea of the screen stays true.
        var out = "\u{1B}7"
        for link in links {
            out += "\u{1B}[\(link.row + 1);\(link.column + 1)H\u{1B}[0;4m" + OSCSequence.hyperlink(link.url, text: link.url)
        }
        Self.write(out + "\u{1B}8")
    }

    public func link(_ url: String, row: Int, column: Int) {
        guard hyperlinks else { return }
        links.append((url, row, column))
    }

    /// Leaves curses (the terminal as the shell had it, bracketed paste off), runs `body`, and
    /// takes the terminal back; the next frame is drawn whole.
    public func suspend(_ body: () -> Void) {
        guard active else { return body() }
        Self.write("\u{1B}[?2004l")
        endwin()
        body()
        Self.write("\u{1B}[?2004h")
        clearok(bn_stdscr(), true)
        refresh()
    }

    /// Written beside curses, like the mode sequences: nothing in it moves the cursor.
    public func alert(_ bytes: String) {
        guard active, !bytes.isEmpty else { return }
        Self.write(bytes)
    }

    public func readKey(milliseconds: Int) -> Key? {
        if !queued.isEmpty { return queued.removeFirst() }
        guard let first = readOne(milliseconds: milliseconds) else { return nil }
        return burst(startingWith: first)
    }

    /// Whether a key is text, as a paste brings it.
    private static func isText(_ key: Key) -> Bool {
        switch key {
        case .character, .enter, .tab: return true
        default: return false
        }
    }

    /// `first`, or the burst it starts. Printable keys already waiting when the first is
    /// read — two or more of them, Enter and Tab among them counted as text — came faster than
    /// anyone types: a paste the terminal did not bracket, or keys typed ahead while the program
    /// was busy. They are handed out whole as a `burst` (the screen decides what it is). The
    /// input queue decides, not a clock. What follows the run (an arrow, Esc) is handed out
    /// key by key.
    private func burst(startingWith first: Key) -> Key {
        guard Self.isText(first) else { return first }
        var keys = [first]
        // Only what is there already: a person's next key is milliseconds away.
        while keys.count < Self.pasteLimit, let next = readOne(milliseconds: 0) {
            keys.append(next)
            if !Self.isText(next) { break }
        }
        let text = Array(keys.prefix(while: Self.isText))
        let printable = text.contains { if case .character = $0 { return true } else { return false } }
        guard text.count >= 2, printable else {
            queued = Array(keys.dropFirst())
            return first
        }
        queued = Array(keys.dropFirst(text.count))
        var pasted = ""
        for key in text {
            switch key {
            case .character(let c): pasted.append(c)
            case .enter: pasted.append("\n")
            default: pasted.append("\t")
            }
        }
        return .burst(pasted)
    }

    /// One key from curses, waiting at most `milliseconds`.
    private func readOne(milliseconds: Int) -> Key? {
        wtimeout(bn_stdscr(), Int32(milliseconds))
        var code: wint_t = 0
        let started = ContinuousClock.now
        errno = 0
        let result = get_wch(&code)
        if result == ERR {
            if errno == EIO || errno == EBADF || errno == ENXIO {
                isClosed = true
            } else if milliseconds > 0, ContinuousClock.now - started < .milliseconds(1) {
                immediateFailures += 1
                if immediateFailures > 100 { isClosed = true }
            } else {
                immediateFailures = 0
            }
            return nil
        }
        immediateFailures = 0
        if result == bn_key_code_yes() {
            switch Int32(code) {
            case KEY_UP: return .up
            case KEY_DOWN: return .down
            case KEY_LEFT: return .left
            case KEY_RIGHT: return .right
            case KEY_HOME: return .home
            case KEY_END: return .end
            case KEY_PPAGE: return .pageUp
            case KEY_NPAGE: return .pageDown
            case KEY_BACKSPACE: return .backspace
            case KEY_DC: return .delete
            case KEY_ENTER: return .enter
            case KEY_BTAB: return .backTab
            case Self.pasteStart: return readPaste()
            case KEY_MOUSE:
                var event = MEVENT()
                guard getmouse(&event) == OK, event.bstate & mmask_t(bn_button1_clicked()) != 0 else { return nil }
                return .click(row: Int(event.y), column: Int(event.x))
            default: return nil  // KEY_RESIZE and others: the caller sees the new size.
            }
        }
        switch code {
        case 9: return .tab
        case 10, 13: return .enter
        case 27: return altOrEscape()
        case 8, 127: return .backspace
        case 1...26: return .control(Character(Unicode.Scalar(UInt8(code) + 96)))
        default:
            guard let scalar = Unicode.Scalar(UInt32(code)) else { return nil }
            return .character(Character(scalar))
        }
    }

    /// Reads a bracketed paste to its end marker (or until the terminal goes quiet for a
    /// second), as text: carriage returns become line feeds.
    private func readPaste() -> Key {
        var text = String.UnicodeScalarView()
        var count = 0
        wtimeout(bn_stdscr(), 1000)
        while true {
            var code: wint_t = 0
            let result = get_wch(&code)
            if result == ERR { break }
            if result == bn_key_code_yes() {
                if Int32(code) == Self.pasteEnd { break }
                continue
            }
            guard count < Self.pasteLimit, let scalar = Unicode.Scalar(UInt32(code)) else { continue }
            text.append(scalar == "\r" ? "\n" : scalar)
            count += 1
        }
        return .paste(String(text))
    }

    /// ESC alone is Escape; ESC with b, f, d or Enter right behind it is how terminals send
    /// Alt-B, Alt-F, Alt-D and Alt-Enter (the editing keys). Anything else after ESC is left for the next read:
    /// Esc then q, typed (or pasted into tmux) in one go, still leaves the field and quits.
    private func altOrEscape() -> Key {
        wtimeout(bn_stdscr(), 0)
        var code: wint_t = 0
        let result = get_wch(&code)
        guard result != ERR else { return .escape }
        // Alt-Enter (ESC, then a carriage return or line feed): a new line in the message.
        if result != bn_key_code_yes(), code == 10 || code == 13 { return .alt("\n") }
        if result != bn_key_code_yes(), let scalar = Unicode.Scalar(UInt32(code)), "bfdBFD".unicodeScalars.contains(scalar) {
            return .alt(Character(scalar.properties.lowercaseMapping))
        }
        if result == bn_key_code_yes() { ungetch(Int32(code)) } else { unget_wch(wchar_t(code)) }
        return .escape
    }
}
