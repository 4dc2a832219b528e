import BreakingNewsKit

/// The bytes that tell a terminal that news arrived: a bell (BEL), and a desktop notification
/// as OSC 9 (iTerm2, WezTerm, Windows Terminal, kitty, foot…) and OSC 777 (rxvt-unicode,
/// VTE terminals, Ghostty…); a terminal ignores the one it does not know. Inside tmux each
/// OSC is wrapped for passthrough (tmux 3.3 and later show it only with
/// `set -g allow-passthrough on`); the bell is left to tmux, which forwards bells itself.
public enum AlertSequence {
    /// The title of the OSC 777 notification.
    static let title = "Breaking News"
    /// The most characters of news a notification carries.
    static let maximumLength = 200

    /// The sequences for `alerts`, telling `text`; "" when both are off.
    public static func bytes(_ alerts: ArrivalAlerts, text: String, insideTmux: Bool) -> String {
        var result = ""
        if alerts.desktop {
            let body = notificationText(text)
            for sequence in ["\u{1B}]9;\(body)\u{07}", "\u{1B}]777;notify;\(title);\(body)\u{07}"] {
                result += insideTmux ? tmuxPassthrough(sequence) : sequence
            }
        }
        if alerts.bell { result += "\u{07}" }
        return result
    }

    /// `text` as one line a notification sequence can carry: `TerminalText.line` with every
    /// control character (C0, DEL, C1) a space, so no news can end the sequence and have the
    /// rest run as terminal commands; line and paragraph separators are spaces too; ';' (the
    /// OSC field separator) becomes ','; runs of spaces shrink to one; at most
    /// `maximumLength` characters.
    public static func notificationText(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        var lastWasSpace = true
        for scalar in TerminalText.line(text, replacement: " ").unicodeScalars {
            let category = scalar.properties.generalCategory
            let kept: Unicode.Scalar =
                category == .lineSeparator || category == .paragraphSeparator ? " " : scalar == ";" ? "," : scalar
            if kept == " ", lastWasSpace { continue }
            lastWasSpace = kept == " "
            scalars.append(kept)
        }
        var line = String(scalars)
        while line.last == " " { line.removeLast() }
        guard line.count > maximumLength else { return line }
        return String(line.prefix(maximumLength - 1)) + "…"
    }

    /// A sequence tmux hands to the terminal outside it: `ESC P tmux; … ESC \`, with every
    /// ESC inside doubled.
    static func tmuxPassthrough(_ sequence: String) -> String {
        var wrapped = "\u{1B}Ptmux;".unicodeScalars
        for scalar in sequence.unicodeScalars {
            if scalar == "\u{1B}" { wrapped.append(scalar) }
            wrapped.append(scalar)
        }
        return String(wrapped) + "\u{1B}\\"
    }
}
