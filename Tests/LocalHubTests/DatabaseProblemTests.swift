import Testing

@testable import LocalHub

/// What a database problem's line may carry: a hostile server's words stay one plain line.
@Suite struct DatabaseProblemTests {
    @Test func aServersWordsLoseTheirEscapesBreaksAndOverrides() {
        let said = DatabaseProblem.line("role \u{1B}[31mhub\u{1B}[0m\nnext\u{2028}line \u{202E}txt.exe\u{7}")
        #expect(said == "role  [31mhub [0m next line  txt.exe ")
        #expect(DatabaseProblem.line(String(repeating: "é", count: 1000)).unicodeScalars.count == 300)
    }
}
