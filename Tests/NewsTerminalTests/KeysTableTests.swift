import Foundation
import Testing

@testable import NewsTerminal

/// The README's key list is the key map's help, row for row: the README cannot name a key
/// the program lacks or miss one it has.
struct KeysTableTests {
    /// The rows of the README's "### Keys" table: key, what it does, where.
    static func readmeRows() throws -> [[String]] {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        let section = try #require(text.components(separatedBy: "\n### Keys\n").dropFirst().first, "no README section Keys")
        return section.split(separator: "\n").prefix { !$0.hasPrefix("#") }.filter { $0.hasPrefix("| ") }.dropFirst()
            .filter { !$0.hasPrefix("|---") }
            .map { line in
                line.split(separator: "|").map {
                    $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "")
                        .replacingOccurrences(of: "\\\\", with: "")
                }
            }
    }

    @Test func theREADMEListsEveryKeyOfTheKeyMap() throws {
        let expected = KeyMap.helpLines.map { [$0.label, $0.summary, $0.scope] }
        let rows = try Self.readmeRows()
        #expect(rows == expected, "README rows:\n\(rows.map { $0.joined(separator: " | ") }.joined(separator: "\n"))")
    }
}
