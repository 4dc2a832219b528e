import Foundation
import Testing

@testable import NewsTerminal

/// The manual's key table (`docs/manual.md`) is the key map's help, row for row: the manual
/// cannot name a key the program lacks or miss one it has.
struct KeysTableTests {
    /// The rows of the manual's "### Keys" table: key, what it does, where.
    static func manualRows() throws -> [[String]] {
        let text = try Manual.text()
        let section = try #require(text.components(separatedBy: "\n### Keys\n").dropFirst().first, "no manual section Keys")
        return section.split(separator: "\n").prefix { !$0.hasPrefix("#") }.filter { $0.hasPrefix("| ") }.dropFirst()
            .filter { !$0.hasPrefix("|---") }
            .map { line in
                // A `|` key is written `\|` in a table: not a column.
                line.replacingOccurrences(of: "\\|", with: "\u{0}").split(separator: "|").map {
                    $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "")
                        .replacingOccurrences(of: "\\\\", with: "").replacingOccurrences(of: "\u{0}", with: "|")
                }
            }
    }

    @Test func theManualListsEveryKeyOfTheKeyMap() throws {
        let expected = KeyMap.helpLines.map { [$0.label, $0.summary, $0.scope] }
        let rows = try Self.manualRows()
        #expect(rows == expected, "manual rows:\n\(rows.map { $0.joined(separator: " | ") }.joined(separator: "\n"))")
    }
}
