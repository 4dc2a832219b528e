import BreakingNewsKit
import CNcursesw
import Foundation

/// Display widths of text in terminal cells, measured with `wcwidth`: CJK and most emoji
/// take two cells, combining marks none.
public enum TextWidth {
    private static let locale: Void = {
        // wcwidth answers -1 for anything beyond ASCII in the C locale.
        if setlocale(LC_CTYPE, "") == nil || String(cString: nl_langinfo(nl_item(CODESET))) != "UTF-8" {
            setlocale(LC_CTYPE, "C.UTF-8")
        }
    }()

    /// Cells one character takes.
    public static func of(_ character: Character) -> Int {
        _ = locale
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if first.value < 0x20 || first.value == 0x7F { return 0 }
        if first.value < 0x7F { return 1 }
        // Emoji presentation (including sequences with VS16 or ZWJ) takes two cells.
        if scalars.contains(where: { $0.properties.isEmojiPresentation })
            || scalars.contains("\u{FE0F}") && first.properties.isEmoji
        {
            return 2
        }
        let width = Int(bn_wcwidth(wchar_t(bitPattern: first.value)))
        return max(width, first.properties.generalCategory == .nonspacingMark ? 0 : 1)
    }

    /// Whether every byte is printable ASCII: then a character is a byte is a cell.
    static func isPlainASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }

    /// Cells a string takes.
    public static func of(_ text: String) -> Int {
        if isPlainASCII(text) { return text.utf8.count }
        return text.reduce(0) { $0 + of($1) }
    }

    /// The longest prefix of `text` that fits in `width` cells.
    public static func prefix(_ text: String, fitting width: Int) -> String {
        guard width > 0 else { return "" }
        if isPlainASCII(text) {
            return text.utf8.count <= width ? text : String(decoding: text.utf8.prefix(width), as: UTF8.self)
        }
        var used = 0
        var result = ""
        for character in text {
            let w = of(character)
            if used + w > width { break }
            used += w
            result.append(character)
        }
        return result
    }

    /// `text` clipped to `width` cells, with `…` when it was cut.
    public static func truncate(_ text: String, to width: Int) -> String {
        if isPlainASCII(text), text.utf8.count <= width { return text }
        guard of(text) > width else { return text }
        guard width > 1 else { return prefix(text, fitting: width) }
        return prefix(text, fitting: width - 1) + "…"
    }

    /// `text` padded with spaces (or clipped) to exactly `width` cells.
    public static func pad(_ text: String, to width: Int) -> String {
        let clipped = truncate(text, to: width)
        return clipped + String(repeating: " ", count: max(0, width - of(clipped)))
    }

    /// Printable form, one line (`TerminalText.line`): a message's newlines and tabs become
    /// spaces, other control characters U+FFFD.
    public static func printable(_ text: String) -> String {
        TerminalText.line(text)
    }
}
