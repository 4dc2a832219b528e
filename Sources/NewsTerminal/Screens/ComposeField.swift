/// The compose screen's message field laid out in rows: the text broken at its line feeds and
/// wrapped at the field's width (between words where a row has a space), the cursor's row and
/// column. One value that the drawing and the keys (↑ and ↓, Home and End, scrolling) read, so
/// what moves the cursor is what the screen shows.
struct ComposeField {
    /// One row on screen: the characters `start..<end` of the text (a line feed ending it is
    /// not among them).
    struct Row: Hashable {
        var start: Int
        var end: Int
        /// Whether the row ends where the text goes on on the next row (wrapped, no line feed):
        /// the cursor cannot stand at its end, which is the next row's start.
        var wraps: Bool
    }

    let rows: [Row]
    let cursorRow: Int
    /// Cells from the row's start to the cursor.
    let cursorColumn: Int
    let width: Int

    init(text: [Character], cursor: Int, width: Int) {
        let width = max(1, width)
        var rows: [Row] = []
        var start = 0
        var used = 0
        // Where the row may break: after its last space.
        var breakAfter: Int?
        var i = 0
        while i < text.count {
            let character = text[i]
            if character == "\n" {
                rows.append(Row(start: start, end: i, wraps: false))
                (start, used, breakAfter) = (i + 1, 0, nil)
                i += 1
                continue
            }
            let cells = Self.shown(character).cells
            if used + cells > width, i > start {
                if character == " ", i + 1 < text.count, text[i + 1] == "\n" {
                    // Hanging before a line feed (not drawn): no empty row after it.
                    i += 1
                    continue
                }
                if character == " " {
                    // A space past the edge ends the row it belongs to (never drawn there).
                    rows.append(Row(start: start, end: i + 1, wraps: true))
                    (start, used, breakAfter) = (i + 1, 0, nil)
                    i += 1
                    continue
                }
                let end = breakAfter ?? i
                rows.append(Row(start: start, end: end, wraps: true))
                start = end
                used = text[end..<i].reduce(0) { $0 + Self.shown($1).cells }
                breakAfter = nil
            }
            used += cells
            if character == " " { breakAfter = i + 1 }
            i += 1
        }
        rows.append(Row(start: start, end: text.count, wraps: false))
        // A last row as wide as the field: the cursor at its end goes on a row of its own.
        if used >= width, text.last != "\n" {
            rows[rows.count - 1].wraps = true
            rows.append(Row(start: text.count, end: text.count, wraps: false))
        }
        let cursor = min(max(0, cursor), text.count)
        var low = 0
        var high = rows.count - 1
        // The last row starting at or before the cursor.
        while low < high {
            let middle = (low + high + 1) / 2
            if rows[middle].start <= cursor { low = middle } else { high = middle - 1 }
        }
        self.rows = rows
        self.cursorRow = low
        self.cursorColumn = text[rows[low].start..<min(cursor, rows[low].end)].reduce(0) { $0 + Self.shown($1).cells }
        self.width = width
    }

    /// How a character of the message is drawn in the field, and the cells it takes: a tab
    /// as a space, other control characters as U+FFFD.
    static func shown(_ character: Character) -> (character: Character, cells: Int) {
        if let ascii = character.asciiValue {
            if ascii >= 0x20 && ascii < 0x7F { return (character, 1) }
            return (ascii == 0x09 ? " " : "\u{FFFD}", 1)
        }
        if let first = character.unicodeScalars.first, (0x80...0x9F).contains(first.value) { return ("\u{FFFD}", 1) }
        return (character, TextWidth.of(character))
    }

    /// A row as drawn, cut to the field's width.
    func text(of row: Row, in text: [Character]) -> String {
        var out = ""
        var used = 0
        for character in text[row.start..<row.end] {
            let (shown, cells) = Self.shown(character)
            if used + cells > width { break }
            out.append(shown)
            used += cells
        }
        return out
    }

    /// The position in row `index` nearest to `column` cells from its start (↑ and ↓ keep the
    /// column as far as the row goes).
    func position(inRow index: Int, column: Int, of text: [Character]) -> Int {
        let row = rows[index]
        let last = row.wraps ? max(row.start, row.end - 1) : row.end
        var position = row.start
        var used = 0
        while position < last {
            let cells = Self.shown(text[position]).cells
            if used + cells > column { break }
            used += cells
            position += 1
        }
        return position
    }

    /// Where the cursor's row starts and where it ends (the end a cursor can stand at).
    var cursorRowBounds: (start: Int, end: Int) {
        let row = rows[cursorRow]
        return (row.start, row.wraps ? max(row.start, row.end - 1) : row.end)
    }

    /// The first row shown in a field `height` rows high that showed `top` first before: moved
    /// as little as keeps the cursor in sight, and never past the last row.
    func top(from top: Int, height: Int) -> Int {
        var top = max(0, top)
        if cursorRow < top { top = cursorRow }
        if cursorRow >= top + height { top = cursorRow - height + 1 }
        return max(0, min(top, rows.count - height))
    }
}
