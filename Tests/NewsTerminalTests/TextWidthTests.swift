import PropertyBased
import Testing

@testable import NewsTerminal

/// The cell walk that drawing and measuring share: mostly-ASCII text skips grapheme breaking,
/// and must still cut text into exactly the characters Swift does, with the same widths.
struct TextWidthTests {
    /// Pieces that join with their neighbours (combining marks, ZWJ, VS16, regional
    /// indicators, CR LF) beside plain ASCII, controls, wide and narrow characters.
    static let piece = Gen.element(of: [
        "a", "Z", " ", "~", "\r", "\n", "\u{7F}", "\u{1}", "\u{301}", "\u{200D}", "\u{FE0F}", "🇫", "🇷", "👩", "😀",
        "日", "●", "—", "é", "e\u{301}", "\u{1100}", "\u{1161}", "#", "\u{20E3}",
    ]).map { $0 ?? "a" }

    @Test func theCellWalkCutsTextAsSwiftDoes() async {
        await propertyCheck(count: 500, input: Self.piece.array(of: 0...24)) { pieces in
            let text = pieces.joined()
            let walked = Array(TextWidth.CellSequence(text))
            #expect(walked.map(\.character) == text.map { String($0) }, "\(text.unicodeScalars.map(\.value))")
            #expect(walked.map(\.width) == text.map { TextWidth.of($0) }, "\(text.unicodeScalars.map(\.value))")
            #expect(TextWidth.of(text) == text.reduce(0) { $0 + TextWidth.of($1) })
        }
    }

    @Test func aMostlyASCIIRowDrawsCellByCell() {
        let terminal = VirtualTerminal(rows: 1, columns: 12)
        terminal.draw(" ● ab e\u{301}日x", row: 0, column: 0, style: .plain)
        #expect(terminal.cells[0] == [" ", "●", " ", "a", "b", " ", "e\u{301}", "日", "", "x", " ", " "])
        #expect(TextWidth.pad(" ● ab", to: 7) == " ● ab  ")
        #expect(TextWidth.pad("日本語テキスト", to: 8) == "日本語… ")
    }
}
