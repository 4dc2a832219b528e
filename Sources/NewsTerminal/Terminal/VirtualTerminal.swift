/// A terminal in memory: screens draw onto it in tests exactly as onto curses, and the
/// result is read back as text, cell by cell.
public final class VirtualTerminal: Terminal {
    /// Each cell holds one character; the cell after a wide character holds "".
    public private(set) var cells: [[String]]
    /// Styles, for the cells that were drawn with one.
    public private(set) var styles: [[Style]]
    public private(set) var cursor: (row: Int, column: Int, visible: Bool) = (0, 0, false)
    public var size: (rows: Int, columns: Int)
    /// Keys `readKey` hands out, first to last.
    public var pendingKeys: [Key] = []
    public private(set) var presentedFrames = 0
    /// The alerts written, in order.
    public private(set) var alerts: [String] = []
    public var isClosed = false
    /// The hyperlinks of the last frame: URL and cell.
    public private(set) var links: [(url: String, row: Int, column: Int)] = []
    /// How many times the terminal was given to a program.
    public private(set) var suspensions = 0

    public init(rows: Int, columns: Int) {
        size = (rows, columns)
        cells = Array(repeating: Array(repeating: " ", count: columns), count: rows)
        styles = Array(repeating: Array(repeating: .plain, count: columns), count: rows)
    }

    public func resize(rows: Int, columns: Int) {
        size = (rows, columns)
        clear()
    }

    public func clear() {
        links = []
        cells = Array(repeating: Array(repeating: " ", count: size.columns), count: size.rows)
        styles = Array(repeating: Array(repeating: .plain, count: size.columns), count: size.rows)
    }

    public func draw(_ text: String, row: Int, column: Int, style: Style) {
        guard row >= 0, row < size.rows else { return }
        // The row is taken out while it is written: one access to the arrays per call, and
        // no copy of the row (it is left empty meanwhile).
        var line: [String] = []
        var lineStyles: [Style] = []
        swap(&line, &cells[row])
        swap(&lineStyles, &styles[row])
        defer {
            swap(&line, &cells[row])
            swap(&lineStyles, &styles[row])
        }
        let columns = size.columns
        if TextWidth.isPlainASCII(text), column >= 0, column + text.utf8.count <= columns {
            // One byte, one cell.
            if column > 0, line[column] == "" { line[column - 1] = " " }
            let end = column + text.utf8.count
            if end < columns, line[end] == "" { line[end] = " " }
            var col = column
            for byte in text.utf8 {
                line[col] = String(UnicodeScalar(byte))
                lineStyles[col] = style
                col += 1
            }
            return
        }
        var col = column
        for (character, width) in TextWidth.CellSequence(text) {
            guard width > 0 else { continue }
            guard col >= 0, col + width <= columns else { break }
            // Overwriting half of a wide character blanks its other half.
            if line[col] == "", col > 0 { line[col - 1] = " " }
            if col + width < columns, line[col + width] == "" { line[col + width] = " " }
            line[col] = character
            lineStyles[col] = style
            if width == 2 {
                line[col + 1] = ""
                lineStyles[col + 1] = style
            }
            col += width
        }
    }

    public func placeCursor(row: Int, column: Int, visible: Bool) {
        cursor = (row, column, visible)
    }

    public func present() { presentedFrames += 1 }

    public func alert(_ bytes: String) { alerts.append(bytes) }

    public func link(_ url: String, row: Int, column: Int) { links.append((url, row, column)) }

    public func suspend(_ body: () -> Void) {
        suspensions += 1
        body()
    }

    /// The screen's colours under `scheme`, a letter a cell (`ColorScheme.letter`: `.` for
    /// the terminal's own), trailing dots removed.
    public func colors(_ scheme: ColorScheme) -> [String] {
        styles.map { row in
            var line = String(row.map { ColorScheme.letter(scheme.color(of: $0.color)) })
            while line.last == "." { line.removeLast() }
            return line
        }
    }

    public func readKey(milliseconds: Int) -> Key? {
        pendingKeys.isEmpty ? nil : pendingKeys.removeFirst()
    }

    /// The screen as lines of text, trailing spaces removed.
    public var lines: [String] {
        cells.map { row in
            var line = row.joined()
            while line.last == " " { line.removeLast() }
            return line
        }
    }

    /// The whole screen as one string.
    public var text: String { lines.joined(separator: "\n") }

    /// The style of the first cell of the first occurrence of `text`, if it is on screen.
    public func style(of text: String) -> Style? {
        for (r, line) in lines.enumerated() {
            guard let range = line.range(of: text) else { continue }
            let prefix = String(line[..<range.lowerBound])
            return styles[r][TextWidth.of(prefix)]
        }
        return nil
    }
}
