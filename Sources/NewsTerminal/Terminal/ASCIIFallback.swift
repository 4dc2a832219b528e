/// What a terminal whose locale is not UTF-8 is sent instead of the UI's glyphs: ASCII
/// stand-ins of the same width, so layout measured in cells stays true. Characters of a
/// message without a stand-in become `?`, one per cell they would take.
public enum ASCIIFallback {
    static let standIns: [Character: Character] = [
        "─": "-", "│": "|", "┌": "+", "┐": "+", "└": "+", "┘": "+", "●": "*", "◌": "o", "○": "o", "▸": ">",
        "▶": ">", "✓": "v", "✗": "x", "⏎": "~", "▏": "|", "↑": "^", "↓": "v", "←": "<", "→": ">", "…": "~",
        "·": ".", "—": "-", "–": "-", "“": "\"", "”": "\"", "‘": "'", "’": "'", "×": "x", "⚠": "!", "▲": "^", "▼": "v",
    ]

    /// `text` in printable ASCII, cell for cell.
    public static func ascii(_ text: String) -> String {
        if TextWidth.isPlainASCII(text) { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            if let standIn = standIns[character] {
                result.append(standIn)
            } else if character.isASCII, let value = character.asciiValue, value >= 0x20, value < 0x7F {
                result.append(character)
            } else {
                result += String(repeating: "?", count: TextWidth.of(character))
            }
        }
        return result
    }
}
