import Foundation

/// The operating system commands the UI writes beside curses: OSC 52 to set the clipboard,
/// OSC 8 to make a run of text a hyperlink.
public enum OSCSequence {
    /// OSC 52: sets the clipboard (`c`) to `text`, base64 encoded; inside tmux wrapped for
    /// passthrough as the arrival alerts are.
    public static func clipboard(_ text: String, insideTmux: Bool) -> String {
        let sequence = "\u{1B}]52;c;" + Data(text.utf8).base64EncodedString() + "\u{07}"
        return insideTmux ? AlertSequence.tmuxPassthrough(sequence) : sequence
    }

    /// OSC 8: `text` shown as a link to `url`. The URL is made safe to carry: control
    /// characters (C0, DEL, C1) are dropped, so no URL can end the sequence early, and every
    /// byte outside printable ASCII is percent-encoded, as the OSC 8 convention asks.
    public static func hyperlink(_ url: String, text: String) -> String {
        "\u{1B}]8;;" + linkTarget(url) + "\u{1B}\\" + text + "\u{1B}]8;;\u{1B}\\"
    }

    /// `url` as an OSC 8 target: no control characters, non-ASCII percent-encoded.
    public static func linkTarget(_ url: String) -> String {
        var out = ""
        for scalar in url.unicodeScalars {
            switch scalar.value {
            case 0x00...0x1F, 0x7F...0x9F: continue
            case 0x20...0x7E: out.unicodeScalars.append(scalar)
            default:
                for byte in String(scalar).utf8 { out += String(format: "%%%02X", byte) }
            }
        }
        return out
    }
}
