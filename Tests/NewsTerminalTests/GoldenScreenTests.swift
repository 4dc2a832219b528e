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

    /// Draws `state` as wide as the capture's rule (100 columns) and compares it with `capture`: the whole screen when
    /// the capture ends with the footer (its height is the screen's), else the screen's top.
    func expectDrawn(_ state: AppState, matches capture: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let endsWithFooter = capture.count >= 2 && capture[capture.count - 2].hasPrefix("────")
        var state = state
        state.rows = endsWithFooter ? capture.count : 30
        // As wide as the rule under the tabs.
        state.columns = capture.count > 2 && capture[2].hasPrefix("────") ? capture[2].count : 100
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
        try #require(captures.count == 3)
        var state = base()
        _ = state.press(.character("2"))
        state.compose.checked = names.map { $0 == "World" || $0 == "Sports" }
        let lines = ["Election night: polls close at 22:00 🗳️", "Turnout is the highest since 1992.", "Results here from 23:00."]
        for (i, line) in lines.enumerated() {
            if i > 0 { _ = state.press(.alt("\n")) }
            _ = state.type(line)
        }
        expectDrawn(state, matches: captures[0])

        // At the smallest size: two rows of the field, scrolled to the cursor (▲: more above).
        var small = state
        small.rows = 14
        small.columns = 50
        _ = small.reduce(.resized(rows: 14, columns: 50))
        _ = small.press(.character(" "))
        _ = small.press(.backspace)
        expectDrawn(small, matches: captures[2])

        let text = lines.joined(separator: "\n")
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
        try #require(captures.count == 5)
        expectDrawn(state, matches: captures[1])
    }

    /// The screen the README shows is one the manual shows, so the tests above hold it too.
    @Test func theREADMEScreenIsOneOfTheManuals() throws {
        let readme = Manual.textBlocks(in: try Manual.readme())
        let screen = try #require(readme.first, "the README shows no screen")
        let manual = Manual.textBlocks(in: try Manual.text())
        #expect(manual.contains(screen), "the README's screen is none of the manual's captures")
    }

    /// A message sent at `sent` and received at `received` (local times).
    static func sentEntry(_ index: Int, _ category: String, _ text: String, sent: String, received: String) -> InboxEntry {
        let delivery = BuiltInPushDelivery(
            seq: Int64(index), notificationId: "w\(index)", hub: "news", device: "ab", template: "simpleAPNSTemplate",
            tags: category, deliveredAt: sent,
            payload: .object([("aps", .object([("alert", .string("Breaking \(category) News : \(text)"))]))]), epoch: "e")
        return InboxEntry(testing: delivery, category: category, index: index, receivedAt: received)
    }

    /// A week away: the terminal was closed from Thursday to Wednesday 11:50, when it
    /// received what it had missed; two more came after. Read: what was read before it went.
    static func weekAway() -> AppState {
        let back = local(2026, 12, 2, 11, 50, 4)
        let sent: [(String, String, (Int, Int, Int, Int))] = [
            ("World", "Ceasefire talks open in Geneva", (11, 25, 18, 2)),
            ("Business", "Chipmaker shares fall 9% on guidance", (11, 26, 9, 15)),
            ("Science", "Probe sends first images from Europa's orbit", (11, 26, 21, 40)),
            ("Sports", "Underdogs reach the cup final", (11, 27, 20, 55)),
            ("Politics", "Budget vote delayed to next week", (11, 28, 10, 5)),
            ("Technology", "Browser ships passkeys by default", (11, 29, 14, 30)),
            ("World", "Floods close the northern rail line", (11, 30, 7, 12)),
            ("Business", "Central bank holds rates at 4%", (11, 30, 13, 0)),
            ("Sports", "Marathon record falls by 40 seconds", (12, 1, 9, 45)),
            ("Science", "New antibiotic class passes trial", (12, 1, 16, 20)),
            ("World", "Storm warning: coastal roads closed 🌀", (12, 1, 22, 10)),
            ("Politics", "Minister resigns over contracts", (12, 2, 8, 30)),
            ("Technology", "Outage takes down payment terminals", (12, 2, 11, 5)),
        ]
        var items: [InboxEntry] = []
        for (i, (category, text, at)) in sent.enumerated() {
            let when = local(2026, at.0, at.1, at.2, at.3, 7)
            // The first two arrived before the terminal went away; the rest when it came back.
            items.append(sentEntry(i + 1, category, text, sent: when, received: i < 2 ? when : back))
        }
        items.append(
            sentEntry(
                14, "World", "Talks resume after overnight break", sent: local(2026, 12, 2, 11, 56, 30),
                received: local(2026, 12, 2, 11, 56, 31)))
        items.append(
            sentEntry(
                15, "Sports", "Cup final moved to Saturday", sent: local(2026, 12, 2, 11, 58, 2),
                received: local(2026, 12, 2, 11, 58, 2)))
        var state = AppState(
            categories: names.map { BreakingNewsKit.Category($0) }, selection: ["World", "Sports"], registration: nil,
            items: items, readMarks: ReadMarks([1...2]), rows: 30, columns: 100,
            now: W3CDate.parse(local(2026, 12, 2, 12, 0, 0))!)
        state.connection = .online
        state.hub = "breakingnews @ 127.0.0.1:47999"
        return state
    }

    /// The Log after a week away, newest first and oldest first, 100×30 and 50×14.
    @Test func aWeekAway() throws {
        let captures = try Self.captures(under: "3 · Log")
        try #require(captures.count == 5)
        var state = Self.weekAway()
        _ = state.press(.character("3"))
        expectDrawn(state, matches: captures[2])
        _ = state.press(.character("O"))
        state.toast = nil
        expectDrawn(state, matches: captures[3])
        var narrow = Self.weekAway()
        _ = narrow.press(.character("3"))
        expectDrawn(narrow, matches: captures[4])
    }
}
