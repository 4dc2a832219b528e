import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

/// A seeded generator: the property tests below draw the same cases on every run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Links in news (issue 33): which are found, and that the message view never splits one.
struct WebLinkTests {
    @Test(arguments: [
        ("see https://example.com/a.", ["https://example.com/a"]),
        ("(https://example.com/wiki/A_(b)) and http://x.org/?q=1,", ["https://example.com/wiki/A_(b)", "http://x.org/?q=1"]),
        ("HTTPS://Example.COM/X", ["HTTPS://Example.COM/X"]),
        ("https://a.io/x;$(touch${IFS}x)", ["https://a.io/x;$(touch${IFS}x)"]),
        ("javascript:alert(1) file:///etc/passwd ftp://x.org", []),
        ("xhttps://a.io https:// https:///path", []),
        ("two: https://a.io/1 https://a.io/1 https://b.io/2", ["https://a.io/1", "https://b.io/2"]),
        ("ends at controls https://a.io/x\u{1B}]0;t\u{07}", ["https://a.io/x"]),
        ("quoted \"https://a.io/q\" <https://b.io/r>", ["https://a.io/q", "https://b.io/r"]),
        ("«https://a.io/é»", ["https://a.io/é"]),
    ])
    func linksAreFound(text: String, links: [String]) {
        #expect(WebLinks.find(in: text) == links)
    }

    /// A link of closing brackets made each keystroke of the message view slow, when each
    /// bracket taken off the end counted the brackets before it again.
    @Test(arguments: [
        "https://" + String(repeating: ")", count: 3_950),
        "see https://a.io/" + String(repeating: "(", count: 2_000) + String(repeating: ")", count: 3_950),
        String(repeating: "https://a.io/]]]. ", count: 300),
        String(repeating: "https:///", count: 500),
    ])
    func scanningVisitsEachCharacterAFewTimes(text: String) {
        var visits = 0
        _ = WebLinks.ranges(in: text, visits: &visits)
        #expect(visits <= 4 * text.count, "\(visits) visits for \(text.count) characters")
    }

    @Test func closingBracketsAreKeptWhereTheLinkOpenedThem() {
        #expect(WebLinks.find(in: "https://" + String(repeating: ")", count: 3_950)) == [])
        #expect(WebLinks.find(in: "https://a.io/((x)))]") == ["https://a.io/((x))"])
        #expect(WebLinks.find(in: "[https://a.io/[a]]].") == ["https://a.io/[a]"])
        #expect(WebLinks.find(in: "https://a.io/)(") == ["https://a.io/)("])
    }

    @Test func onlyHttpAndHttpsWithAHostAreWebLinks() {
        #expect(WebLinks.isWebLink("https://a.io/x;$(touch x)") == false, "no spaces")
        #expect(WebLinks.isWebLink("https://a.io/x;$(touch${IFS}x)"))
        #expect(WebLinks.isWebLink("HTTP://a.io"))
        for refused in [
            "javascript:alert(1)", "file:///etc/passwd", "https://", "https:///x", "-https://a.io", "https://a.io/\u{7}",
        ] {
            #expect(!WebLinks.isWebLink(refused), "\(refused)")
        }
    }

    static let words = [
        "Breaking", "World", "News", ":", "élection", "日本語", "🗳️", "a", "longwordwithoutanyspaceatallinit", "(see", "it).",
    ]
    static let links = [
        "https://example.com/a", "http://news.example.org/2026/11/27/a-very-long-path/with-more/and-more?x=1&y=2",
        "https://a.io/x;$(touch${IFS}x)", "https://ja.example/日本",
    ]

    /// Random messages of words and links: every link is found, in order, and the wrap keeps
    /// each one whole on one line, never cuts the text and keeps other lines to the width.
    @Test func wrappingNeverSplitsALinkAndKeepsTheText() {
        var random = SeededGenerator(state: 33)
        for _ in 0..<500 {
            var parts: [String] = []
            var inserted: [String] = []
            for _ in 0..<Int.random(in: 1...30, using: &random) {
                if Int.random(in: 0..<5, using: &random) == 0 {
                    let link = Self.links.randomElement(using: &random)!
                    parts.append(link)
                    if !inserted.contains(link) { inserted.append(link) }
                } else {
                    parts.append(Self.words.randomElement(using: &random)!)
                }
            }
            let text = parts.joined(separator: " ")
            #expect(WebLinks.find(in: text) == inserted, "\(text)")
            let width = Int.random(in: 8...80, using: &random)
            let lines = Canvas.wrap(text, width: width)
            for link in inserted {
                #expect(lines.contains { $0.contains(link) }, "\(link) split at \(width): \(lines)")
            }
            for line in lines where TextWidth.of(line) > width {
                #expect(WebLinks.ranges(in: line).count == 1 && !line.contains(" "), "too wide at \(width): \(line)")
            }
            #expect(lines.joined().filter { $0 != " " } == text.filter { $0 != " " })
        }
    }
}

/// `$BROWSER` as the convention has it.
struct BrowserCommandTests {
    static let url = "https://a.io/x;$(touch${IFS}x)%s"

    @Test func alternativesPercentSAndTheFallback() {
        #expect(BrowserCommand.candidates(browser: nil, url: "https://a.io") == [["xdg-open", "https://a.io"]])
        #expect(BrowserCommand.candidates(browser: "", url: "https://a.io") == [["xdg-open", "https://a.io"]])
        #expect(
            BrowserCommand.candidates(browser: "lynx:w3m -T text/html %s:firefox --new-tab=%s --x=%%s", url: Self.url) == [
                ["lynx", Self.url], ["w3m", "-T", "text/html", Self.url], ["firefox", "--new-tab=\(Self.url)", "--x=%s"],
                ["xdg-open", Self.url],
            ])
        #expect(
            BrowserCommand.candidates(browser: " :xdg-open: /opt/b  ", url: "https://a.io") == [
                ["xdg-open", "https://a.io"], ["/opt/b", "https://a.io"],
            ])
    }

    @Test func theURLIsNeverReadAsADirective() {
        #expect(BrowserCommand.substitute("https://a.io/%s%%", into: "%s") == "https://a.io/%s%%")
        #expect(BrowserCommand.substitute("u", into: "a%sb%%c%") == "aub%c%")
    }
}

/// The sequences, as known vectors.
struct OSCSequenceTests {
    @Test func clipboardIsOSC52InBase64WrappedInsideTmux() {
        #expect(OSCSequence.clipboard("héllo", insideTmux: false) == "\u{1B}]52;c;aMOpbGxv\u{07}")
        #expect(OSCSequence.clipboard("hi", insideTmux: true) == "\u{1B}Ptmux;\u{1B}\u{1B}]52;c;aGk=\u{07}\u{1B}\\")
    }

    @Test func hyperlinksCarryNoControlCharacters() {
        #expect(
            OSCSequence.hyperlink("https://a.io/x", text: "https://a.io/x")
                == "\u{1B}]8;;https://a.io/x\u{1B}\\https://a.io/x\u{1B}]8;;\u{1B}\\")
        #expect(OSCSequence.linkTarget("https://a.io/\u{1B}\\\u{07}\u{9C}x\u{7F}") == "https://a.io/\\x")
        #expect(OSCSequence.linkTarget("https://a.io/é") == "https://a.io/%C3%A9")
    }
}
