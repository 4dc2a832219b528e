import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

/// `o`, `y` and `|` on the Log's row and in the message view (issue 33).
struct ActionReducerTests {
    static let twoLinks = "Breaking World News : Live https://news.example/live and https://source.example/report."
    static func onLog(_ text: String) -> AppState {
        var state = makeState(items: [entry(1, "World", text)])
        _ = state.press(.character("3"))
        return state
    }

    @Test func oOpensTheOnlyLinkOrChoosesAmongSeveral() {
        var state = Self.onLog("Breaking World News : see https://a.example/x.")
        #expect(state.press(.character("o")) == [.openLink("https://a.example/x")])

        state = Self.onLog(Self.twoLinks)
        #expect(state.press(.character("o")) == [])
        #expect(rendered(state).text.contains("Open which link?"))
        #expect(rendered(state).text.contains("▸ 1 https://news.example/live"))
        #expect(state.press(.down, .enter) == [.openLink("https://source.example/report")])
        #expect(state.chooser == nil)
        // A digit takes its line; Esc takes none.
        _ = state.press(.character("o"))
        #expect(state.press(.character("1")) == [.openLink("https://news.example/live")])
        _ = state.press(.character("o"))
        #expect(state.press(.escape) == [])
        #expect(state.chooser == nil)
    }

    @Test func onlyHttpAndHttpsAreOpened() {
        var state = Self.onLog("Breaking World News : javascript:alert(1) file:///etc/passwd")
        #expect(state.press(.character("o")) == [])
        #expect(state.toast?.text == "No http or https link in this message")
    }

    @Test func inTheMessageViewTooWithTimeCategoryAndId() {
        var state = Self.onLog(Self.twoLinks)
        _ = state.press(.enter)
        let screen = rendered(state)
        #expect(screen.text.contains("Category  World"))
        #expect(screen.text.contains("Id        n1"))
        #expect(screen.text.contains("Received  "))
        #expect(screen.text.contains("Links     2"))
        #expect(screen.lines.last?.contains("o open link  y copy  | pipe") == true)
        // The links on screen are hyperlinks where the terminal has them.
        #expect(
            screen.links.map(\.url)
                == ["https://news.example/live", "https://source.example/report."].map { $0 }.map {
                    $0.hasSuffix(".") ? String($0.dropLast()) : $0
                })
        for link in screen.links {
            let row = screen.lines[link.row]
            let start = row.index(row.startIndex, offsetBy: link.column)
            #expect(row[start...].hasPrefix(link.url))
        }
        #expect(state.press(.character("o"), .character("2")) == [.openLink("https://source.example/report")])
        #expect(state.dialog?.entry != nil, "the message view stays")
    }

    @Test func yCopiesTheMessageOrALink() {
        var state = Self.onLog("Breaking World News : no link")
        #expect(state.press(.character("y")) == [.copy("Breaking World News : no link", what: "the message")])
        state = Self.onLog(Self.twoLinks)
        #expect(state.press(.character("y")) == [])
        #expect(rendered(state).text.contains("Copy what?"))
        #expect(state.press(.enter) == [.copy(Self.twoLinks, what: "the message")])
        _ = state.press(.character("y"))
        #expect(state.press(.character("3")) == [.copy("https://source.example/report", what: "the link")])
    }

    @Test func pipeAsksForACommandTypedInTheFooter() {
        var state = Self.onLog("Breaking World News : hello")
        #expect(state.press(.character("|")) == [])
        // Every printable key is text there, q and the bound keys included.
        #expect(state.type("wc -c q") == [])
        #expect(rendered(state).lines.last?.contains("| command: wc -c q▏") == true)
        _ = state.press(.backspace, .backspace)
        #expect(state.press(.enter) == [.pipe(text: "Breaking World News : hello", command: "wc -c")])
        #expect(state.pipePrompt == nil)
        // Offered again; Esc cancels.
        _ = state.press(.character("|"))
        #expect(state.pipePrompt?.command == "wc -c")
        #expect(state.press(.escape) == [])
        #expect(state.pipePrompt == nil && !state.quitting)
        _ = state.reduce(.actionDone("Piped to wc -c: exit status 0"))
        #expect(rendered(state).text.contains("Piped to wc -c: exit status 0"))
    }
}
