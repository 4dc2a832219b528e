import Foundation

/// The documents the terminal's tests hold to the code: the manual (`docs/manual.md`), whose
/// screen captures and key table must be what the app draws and binds, and the README.
enum Manual {
    /// The repository's top folder, found from this file's place in `Tests/NewsTerminalTests`.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The manual's text.
    static func text() throws -> String {
        try String(contentsOf: root.appendingPathComponent("docs/manual.md"), encoding: .utf8)
    }

    /// The README's text.
    static func readme() throws -> String {
        try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    }

    /// The ```text blocks of `text`, in order, each as its lines.
    static func textBlocks(in text: String, stoppingAtSection: Bool = false) -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if stoppingAtSection, current == nil, line.hasPrefix("## ") { break }
            if line == "```text" {
                current = []
            } else if line == "```", let block = current {
                blocks.append(block)
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }
}
