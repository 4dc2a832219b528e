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
        if let ascii = character.asciiValue { return ascii >= 0x20 && ascii < 0x7F ? 1 : 0 }
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
        var cells = 0
        for (_, width) in CellSequence(text) { cells += width }
        return cells
    }

    /// The characters of `text` with the cells each takes. A printable ASCII byte that no
    /// other scalar follows is a character of its own, so mostly-ASCII text (a log row with
    /// its unread dot) skips the grapheme breaking that only its other characters need.
    struct CellSequence: Sequence, IteratorProtocol {
        private let text: String
        private var index: String.Index

        init(_ text: String) {
            self.text = text
            index = text.startIndex
        }

        mutating func next() -> (character: String, width: Int)? {
            let utf8 = text.utf8
            guard index < utf8.endIndex else { return nil }
            let byte = utf8[index]
            let after = utf8.index(after: index)
            if byte >= 0x20, byte < 0x7F, after == utf8.endIndex || utf8[after] < 0x80 {
                index = after
                return (String(UnicodeScalar(byte)), 1)
            }
            // A character boundary: the text's start, or just after a character.
            guard let character = text[index...].first else { return nil }
            index = utf8.index(index, offsetBy: character.utf8.count)
            return (String(character), TextWidth.of(character))
        }
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
        of(text) > width ? cut(text, to: width) : text
    }

    /// `text` padded with spaces (or clipped) to exactly `width` cells; measured once when it
    /// fits.
    public static func pad(_ text: String, to width: Int) -> String {
        let used = of(text)
        if used == width { return text }
        if used < width { return text + String(repeating: " ", count: width - used) }
        let clipped = cut(text, to: width)
        return clipped + String(repeating: " ", count: max(0, width - of(clipped)))
    }

    /// `text`, known to be wider than `width`, cut to fit with `…` (when there is room for it).
    private static func cut(_ text: String, to width: Int) -> String {
        width > 1 ? prefix(text, fitting: width - 1) + "…" : prefix(text, fitting: width)
    }

    /// Printable form, one line (`TerminalText.line`): a message's newlines and tabs become
    /// spaces, other control characters U+FFFD.
    public static func printable(_ text: String) -> String {
        TerminalText.line(text)
    }
}
