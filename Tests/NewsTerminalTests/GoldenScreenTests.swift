import BreakingNewsKit
import Foundation
import NotificationHubs
import Testing

@testable import NewsTerminal

/// The screens the manual (`docs/manual.md`) shows, drawn from states like the ones they were
/// captured in and compared character for character: the manual cannot drift from what the
/// app draws. The README's one screen is one of them.
struct GoldenScreenTests {
    /// The ```text blocks of the manual's section whose `###` heading starts with `heading`.
    static func captures(under heading: String) throws -> [[String]] {
        let sections = try Manual.text().components(separatedBy: "\n### ")
        let section = try #require(sections.first { $0.hasPrefix(heading) }, "no manual section '\(heading)'")
        return Manual.textBlocks(in: section, stoppingAtSection: true)
    }

    /// Draws `state` 100 columns wide and compares it with `capture`: the whole screen when
    /// the capture ends with the footer (its height is the screen's), else the screen's top.
    func expectDrawn(_ state: AppState, matches capture: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let endsWithFooter = capture.count >= 2 && capture[capture.count - 2].hasPrefix("────")
        var state = state
        state.rows = endsWithFooter ? capture.count : 30
        state.columns = 100
        let terminal = VirtualTerminal(rows: state.rows, columns: state.columns)
        Layout.render(state, on: terminal)
        let drawn = terminal.lines.prefix(capture.count).map {
            $0.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
        #expect(drawn.count == capture.count, sourceLocation: sourceLocation)
        for (i, (line, expected)) in zip(drawn, capture).enumerated() where line != expected {
            Issue.record("line \(i):\n  drawn:  \(line)\n  manual: \(expected)", sourceLocation: sourceLocation)
        }
    }

    /// Today at a local time of day, as the hub writes dates.
    static func today(_ hour: Int, _ minute: Int, _ second: Int) -> String {
        let calendar = Calendar.current
        let date = calendar.date(bySettingHour: hour, minute: minute, second: second, of: now)!
        return W3CDate.format(date)
    }

    static let now = Date()

    /// A W3C time of a local date and time.
    static func local(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int, _ second: Int) -> String {
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return W3CDate.format(Calendar.current.date(from: components)!)
    }

    func base(selection: [BreakingNewsKit.Category] = ["World", "Sports"], items: [InboxEntry] = [], read: [String: Int] = [:])
        -> AppState
    {
        var state = makeState(selection: selection, items: items, read: read)
        state.now = Self.now
        state.connection = .online
        state.hub = "breakingnews @ 127.0.0.1:47999"
        return state
    }

    @Test func categories() throws {
        var state = base()
        state.registration = RegistrationRecord(
            state: .registered, at: Self.today(17, 38, 56), categories: ["World", "Sports"], hub: "h")
        _ = state.press(.down)
        let capture = try #require(try Self.captures(under: "1 · Categories").first)
        expectDrawn(state, matches: capture)
    }

    @Test func composeBeforeAndAfterSending() throws {
        let captures = try Self.captures(under: "2 · Compose")
        try #require(captures.count == 2)
        var state = base()
        _ = state.press(.character("2"))
        state.compose.checked = names.map { $0 == "World" || $0 == "Sports" }
        _ = state.type("Election night: polls close at 22:00 🗳️")
        expectDrawn(state, matches: captures[0])

        let text = "Election night: polls close at 22:00 🗳️"
        #expect(state.press(.enter) == [], "two categories: asked first")
        #expect(state.press(.enter) == [.send(text: text, categories: ["World", "Sports"])])
        _ = state.reduce(
            .sent([
                SendResultRow(category: "World", succeeded: true, detail: "a9f09ce5f9654d18b7722347fe4e1977-20261121173925-10"),
                SendResultRow(category: "Sports", succeeded: true, detail: "0a62dd8a101146be913493a1c90fb540-20261121173925-11"),
            ]))
        let arrived = Self.today(17, 39, 25)
        _ = state.reduce(
            .inbox(
                .received([
                    entry(1, "World", "Breaking World News : \(text)", receivedAt: arrived),
                    entry(2, "Sports", "Breaking Sports News : \(text)", receivedAt: arrived),
                ])))
        expectDrawn(state, matches: captures[1])
    }

    @Test func log() throws {
        let items = [
            entry(1, "World", "Breaking World News : Central bank holds rates", receivedAt: Self.today(17, 38, 56)),
            entry(2, "Sports", "Breaking Sports News : Final whistle: 2–1 after extra time", receivedAt: Self.today(17, 38, 56)),
            entry(3, "World", "Breaking World News : Markets rally as rate cut lands", receivedAt: Self.today(17, 38, 58)),
            entry(4, "World", "Breaking World News : Storm warning: coastal roads closed 🌀", receivedAt: Self.today(17, 39, 14)),
            entry(
                5, "Sports", "Breaking Sports News : Storm warning: coastal roads closed 🌀", receivedAt: Self.today(17, 39, 14)),
        ]
        var state = base(items: items, read: ["World": 3, "Sports": 2])
        _ = state.press(.character("3"))
        let capture = try #require(try Self.captures(under: "3 · Log").first)
        expectDrawn(state, matches: capture)
    }

    /// Enter on a message: the message view, with its time, category, id and links.
    @Test func messageView() throws {
        let text =
            "Breaking World News : Storm warning: coastal roads closed 🌀 Live updates https://news.example.com/live/storm-warning-coastal-roads and the forecast https://weather.example.org/coast?region=north."
        let delivery = BuiltInPushDelivery(
            seq: 6, notificationId: "a9f09ce5f9654d18b7722347fe4e1977-20261121173914-6", hub: "news", device: "ab",
            template: "simpleAPNSTemplate", tags: "World", deliveredAt: Self.local(2026, 11, 21, 17, 39, 14),
            payload: .object([("aps", .object([("alert", .string(text))]))]), epoch: "e")
        var state = base(items: [
            InboxEntry(testing: delivery, category: "World", index: 1, receivedAt: Self.local(2026, 11, 21, 17, 39, 15))
        ])
        // The view gives the date whatever the day; the list, today's time.
        state.now = try #require(W3CDate.parse(Self.local(2026, 11, 21, 17, 40, 0)))
        _ = state.press(.character("3"), .enter)
        let captures = try Self.captures(under: "3 · Log")
        try #require(captures.count == 2)
        expectDrawn(state, matches: captures[1])
    }

    /// The screen the README shows is one the manual shows, so the tests above hold it too.
    @Test func theREADMEScreenIsOneOfTheManuals() throws {
        let readme = Manual.textBlocks(in: try Manual.readme())
        let screen = try #require(readme.first, "the README shows no screen")
        let manual = Manual.textBlocks(in: try Manual.text())
        #expect(manual.contains(screen), "the README's screen is none of the manual's captures")
    }
}
