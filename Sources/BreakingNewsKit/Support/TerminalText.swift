/// Text from the network made safe to show on a terminal: a terminal obeys the control
/// characters in what it prints (`ESC ] 0 ;` retitles the window, `ESC [ 2 J` clears it,
/// OSC 52 writes the clipboard, C1 `U+009B` starts a sequence too), so none may reach it.
public enum TerminalText {
    /// `text` as one line: tab, line feed and carriage return become spaces, every other C0
    /// control, DEL and C1 control becomes `replacement` (U+FFFD: shown, not obeyed).
    public static func line(_ text: String, replacement: Unicode.Scalar = "\u{FFFD}") -> String {
        clean(text, keepingLineFeeds: false, replacement: replacement)
    }

    /// `text` with its line feeds and tabs kept, for output the program lays out in lines
    /// itself; carriage returns (which let a line overwrite what came before) and every
    /// other control become U+FFFD.
    public static func lines(_ text: String) -> String {
        clean(text, keepingLineFeeds: true, replacement: "\u{FFFD}")
    }

    private static func clean(_ text: String, keepingLineFeeds: Bool, replacement: Unicode.Scalar) -> String {
        if text.utf8.allSatisfy({ ($0 >= 0x20 && $0 < 0x7F) || (keepingLineFeeds && ($0 == 0x0A || $0 == 0x09)) }) {
            return text
        }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x09, 0x0A:
                out.append(keepingLineFeeds ? scalar : " ")
            case 0x0D:
                out.append(keepingLineFeeds ? replacement : " ")
            case 0x00...0x1F, 0x7F...0x9F:
                out.append(replacement)
            default:
                out.append(scalar)
            }
        }
        return String(out)
    }
}
