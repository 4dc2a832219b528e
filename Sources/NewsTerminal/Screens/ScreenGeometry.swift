/// Where things are on a screen of a given size: one value that drawing, the reducer
/// (paging) and mouse hit-tests all read, so a row moved in one place moves everywhere.
public struct ScreenGeometry: Sendable, Hashable {
    public let rows: Int
    public let columns: Int

    public init(rows: Int, columns: Int) {
        self.rows = rows
        self.columns = columns
    }

    /// The smallest terminal the screens fit in.
    public static let minimumRows = 14
    public static let minimumColumns = 50

    public var fits: Bool { rows >= Self.minimumRows && columns >= Self.minimumColumns }

    /// Under the header (title and status, row 0): the tabs, and the rule under them.
    public static let tabsRow = 1
    public static let headerRule = 2
    /// First row of a screen's content (its title line).
    public static let contentTop = 3
    /// First row of a screen's list, under its title and a blank line.
    public static let listTop = contentTop + 2

    /// A screen too short for the roomy layout: screens drop their blank lines and labels so
    /// that their buttons stay in sight.
    public var isCompact: Bool { rows < 17 }

    /// The compose screen's message field: rows high (more on a taller screen) and cells wide.
    public var composeFieldRows: Int { isCompact ? 2 : max(2, min(8, rows - 25)) }
    public var composeFieldWidth: Int { max(10, columns - 6) }

    /// The rule above the footer, and the footer's row of keys.
    public var footerRule: Int { rows - 2 }
    public var footerRow: Int { rows - 1 }
    /// The row a list shows its position on (`12/40`), just above the footer rule.
    public var positionRow: Int { rows - 3 }
    /// Messages the log shows at once: the rows from `listTop` to above the position row.
    public var logPageSize: Int { max(1, positionRow - Self.listTop) }
}
