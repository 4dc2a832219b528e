/// Drawing helpers over a terminal: every call clips to the screen, so nothing a message
/// contains (wide characters, control characters, sheer length) can draw outside its place.
struct Canvas {
    let terminal: Terminal
    let rows: Int
    let columns: Int
    /// Rows from here down are not drawn: a screen's content stops above the footer.
    var bottom: Int

    init(_ terminal: Terminal) {
        self.terminal = terminal
        (rows, columns) = terminal.size
        bottom = rows
    }

    /// Draws text at a cell, clipped to `width` cells (default: to the right edge).
    @discardableResult
    func text(_ text: String, row: Int, column: Int, style: Style = .plain, width: Int? = nil) -> Int {
        guard row >= 0, row < bottom, column >= 0, column < columns else { return 0 }
        let room = min(width ?? columns - column, columns - column)
        let clipped = TextWidth.truncate(TextWidth.printable(text), to: room)
        terminal.draw(clipped, row: row, column: column, style: style)
        return TextWidth.of(clipped)
    }

    /// Fills a whole row with `text` padded to the width.
    func bar(_ text: String, row: Int, style: Style) {
        guard row >= 0, row < bottom else { return }
        terminal.draw(TextWidth.pad(TextWidth.printable(text), to: columns), row: row, column: 0, style: style)
    }

    /// Marks `url`, drawn at a cell already, as a hyperlink to it (where the terminal draws
    /// them); only when it fits on the row.
    func link(_ url: String, row: Int, column: Int) {
        guard row >= 0, row < bottom, column >= 0, column + TextWidth.of(url) <= columns else { return }
        terminal.link(url, row: row, column: column)
    }

    /// A horizontal rule.
    func rule(row: Int) {
        guard row >= 0, row < bottom else { return }
        terminal.draw(String(repeating: "─", count: columns), row: row, column: 0, style: Style(color: .muted))
    }

    /// Text spread over lines of at most `width` cells, breaking at spaces where it can; a
    /// word longer than a line is cut, unless it holds a link, which keeps a line of its own
    /// however long.
    static func wrap(_ text: String, width: Int) -> [String] {
        guard width > 0 else { return [] }
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            for word in TextWidth.printable(String(paragraph)).split(separator: " ", omittingEmptySubsequences: false) {
                var word = String(word)
                let candidate = line.isEmpty ? word : line + " " + word
                if TextWidth.of(candidate) <= width {
                    line = candidate
                    continue
                }
                if !line.isEmpty { lines.append(line) }
                // A link is never split: one too long for a line has a line of its own.
                while TextWidth.of(word) > width, WebLinks.ranges(in: word).isEmpty {
                    let head = TextWidth.prefix(word, fitting: width)
                    lines.append(head)
                    word = String(word.dropFirst(head.count))
                }
                line = word
            }
            lines.append(line)
        }
        return lines
    }
}
