import BreakingNewsKit
import Foundation
import Testing

@testable import NewsTerminal

/// The bell and desktop notification on arrival (issue 12): the bytes, what a hostile
/// message can do to them, and the reducer's decisions.
struct ArrivalAlertTests {
    static let esc = "\u{1B}"
    static let bel = "\u{07}"

    func render(_ state: AppState) -> VirtualTerminal {
        let terminal = VirtualTerminal(rows: state.rows, columns: state.columns)
        Layout.render(state, on: terminal)
        return terminal
    }

    @Test func aDesktopNotificationIsOSC9AndOSC777() {
        let bytes = AlertSequence.bytes(ArrivalAlerts(desktop: true), text: "Breaking World News : hello", insideTmux: false)
        #expect(
            bytes == "\(Self.esc)]9;Breaking World News : hello\(Self.bel)"
                + "\(Self.esc)]777;notify;Breaking News;Breaking World News : hello\(Self.bel)")
    }

    @Test func theBellIsOneBELAndNothingWhenBothAreOff() {
        #expect(AlertSequence.bytes(ArrivalAlerts(bell: true), text: "x", insideTmux: false) == Self.bel)
        #expect(AlertSequence.bytes(ArrivalAlerts(bell: true), text: "x", insideTmux: true) == Self.bel)
        #expect(AlertSequence.bytes(.off, text: "x", insideTmux: true) == "")
    }

    @Test func insideTmuxEachNotificationIsWrappedForPassthrough() {
        let bytes = AlertSequence.bytes(ArrivalAlerts(bell: true, desktop: true), text: "hi", insideTmux: true)
        let e = Self.esc
        #expect(
            bytes == "\(e)Ptmux;\(e)\(e)]9;hi\(Self.bel)\(e)\\"
                + "\(e)Ptmux;\(e)\(e)]777;notify;Breaking News;hi\(Self.bel)\(e)\\"
                + Self.bel)
    }

    /// A message that tries to end the notification and run an OSC 52 (write the clipboard)
    /// of its own stays text inside the one sequence.
    @Test func aHostileMessageCannotEndTheSequence() {
        let hostile =
            "news\(Self.bel)\(Self.esc)]52;c;ZWNobyBvd25lZA==\(Self.bel)\(Self.esc)\\ and \u{9D}52;c;eA==\u{9C}\u{7F} line\nbreak\r\u{2028}end"
        let text = AlertSequence.notificationText(hostile)
        #expect(text == "news ]52,c,ZWNobyBvd25lZA== \\ and 52,c,eA== line break end")
        for desktop in [false, true] {
            let bytes = AlertSequence.bytes(ArrivalAlerts(bell: true, desktop: desktop), text: hostile, insideTmux: false)
            let scalars = bytes.unicodeScalars
            // Only the sequences' own: one ESC and one BEL per notification, and the bell.
            #expect(scalars.filter { $0 == "\u{1B}" }.count == (desktop ? 2 : 0))
            #expect(scalars.filter { $0 == "\u{07}" }.count == (desktop ? 3 : 1))
            #expect(
                !scalars.contains { ($0.value < 0x20 && $0 != "\u{1B}" && $0 != "\u{07}") || (0x7F...0x9F).contains($0.value) })
            #expect(!bytes.contains("\(Self.esc)]52"))
        }
        let tmux = AlertSequence.bytes(ArrivalAlerts(desktop: true), text: hostile, insideTmux: true)
        // Inside the passthrough every ESC is doubled; the message brings none.
        #expect(tmux.unicodeScalars.filter { $0 == "\u{1B}" }.count == 2 * 4)
    }

    @Test func aLongMessageIsCutTo200Characters() {
        let text = AlertSequence.notificationText(String(repeating: "🗳️a", count: 300))
        #expect(text.count == 200)
        #expect(text.hasSuffix("…"))
        #expect(AlertSequence.notificationText("   ;;  ") == ",,")
    }

    @Test func arrivalsAlertOnlyWhenSwitchedOn() {
        var state = makeState()
        #expect(state.alerts == .off)
        #expect(state.reduce(.inbox(.received([entry(1, "World", "Breaking World News : one")]))) == [])

        let bellOn = state.press(.character("b"))
        #expect(state.alerts == ArrivalAlerts(bell: true))
        #expect(bellOn.first == .setAlert(.bell, on: true))
        #expect(
            bellOn.contains { if case .alert(ArrivalAlerts(bell: true), _, 1, nil) = $0 { true } else { false } }, "a taste of it"
        )
        #expect(state.toast?.text == "Bell on new messages: on")

        let arrived = state.reduce(
            .inbox(
                .received([entry(2, "World", "Breaking World News : two"), entry(3, "Sports", "Breaking Sports News : three")])))
        #expect(arrived == [.alert(ArrivalAlerts(bell: true), text: "Breaking Sports News : three", count: 2, through: 3)])
        #expect(
            state.toast?.text == "2 new: Breaking Sports News : three",
            "the switch's note gives way to the news (the categories screen says it), and counts no message")

        #expect(state.press(.character("d")).first == .setAlert(.desktop, on: true))
        // On the log screen too: the alert is for the user working elsewhere.
        _ = state.press(.character("3"))
        _ = state.reduce(.tick(state.now.addingTimeInterval(alertSeconds)))
        // (The log may ask for read marks too; only alerts matter here.)
        #expect(
            Self.alerts(state.reduce(.inbox(.received([entry(4, "World", "Breaking World News : four")]))))
                == [.alert(ArrivalAlerts(bell: true, desktop: true), text: "Breaking World News : four", count: 1, through: 4)])

        #expect(state.press(.character("b")) == [.setAlert(.bell, on: false)], "switched off: no taste")
        #expect(state.press(.character("d")) == [.setAlert(.desktop, on: false)])
        #expect(Self.alerts(state.reduce(.inbox(.received([entry(5, "World", "Breaking World News : five")])))) == [])
    }

    static func alerts(_ effects: [Effect]) -> [Effect] { effects.filter { if case .alert = $0 { true } else { false } } }

    /// A burst that arrives over a while rings once every `alertSeconds`, counted.
    @Test func aBurstIsOneAlertAtATime() {
        var state = makeState()
        _ = state.press(.character("d"))
        let start = state.now
        func tick(_ seconds: TimeInterval) -> [Effect] { state.reduce(.tick(start.addingTimeInterval(seconds))) }
        let desktop = ArrivalAlerts(desktop: true)
        #expect(
            state.reduce(.inbox(.received([entry(1, "World", "one")]))) == [.alert(desktop, text: "one", count: 1, through: 1)])
        #expect(state.reduce(.inbox(.received([entry(2, "World", "two")]))) == [])
        #expect(tick(0.5) == [])
        #expect(state.reduce(.inbox(.received([entry(3, "World", "three"), entry(4, "World", "four")]))) == [])
        #expect(tick(alertSeconds) == [.alert(desktop, text: "four", count: 3, through: 4)])
        #expect(tick(alertSeconds * 3) == [], "nothing held")
        #expect(
            state.reduce(.inbox(.received([entry(5, "World", "five")]))) == [.alert(desktop, text: "five", count: 1, through: 5)])
        // Switched off while one is held: it goes unannounced.
        #expect(state.reduce(.inbox(.received([entry(6, "World", "six")]))) == [])
        _ = state.press(.character("d"))
        #expect(tick(alertSeconds * 10) == [])
    }

    @Test func theMessageFieldTakesBAndDAsText() {
        var state = makeState()
        _ = state.press(.character("2"))
        #expect(state.type("bd") == [])
        #expect(String(state.compose.text) == "bd")
        #expect(state.alerts == .off)
        // On the category row too (issue 45: letters are text on Compose); elsewhere they switch.
        _ = state.press(.escape)
        #expect(state.press(.character("d")) == [])
        #expect(String(state.compose.text) == "bdd" && state.alerts == .off)
        _ = state.press(.tab)
        #expect(state.screen == .log)
        #expect(state.press(.character("d")).first == .setAlert(.desktop, on: true))
    }

    @Test func anotherWindowsSwitchIsFollowed() {
        var state = makeState()
        _ = state.reduce(
            .shared(
                SharedHomeState(
                    selection: [], registration: nil, alerts: ArrivalAlerts(desktop: true))))
        #expect(state.alerts == ArrivalAlerts(desktop: true))
    }

    /// The home's alerts as read before this window's own switches were stored lack them: b
    /// then d, and the file read between the two writes does not switch d off again (found
    /// under stress-ng: news in between rang the bell without the desktop notification). Read
    /// once both were stored, the file is followed again.
    @Test func alertsReadBeforeThisWindowsSwitchWasStoredDoNotUndoIt() {
        var state = makeState()
        _ = state.press(.character("b"), .character("d"))
        let between = SharedHomeState(selection: [], registration: nil, alerts: ArrivalAlerts(bell: true))
        _ = state.reduce(.shared(between, alertSwitchesStored: 1))
        #expect(state.alerts == ArrivalAlerts(bell: true, desktop: true))
        let after = SharedHomeState(selection: [], registration: nil, alerts: ArrivalAlerts(desktop: true))
        _ = state.reduce(.shared(after, alertSwitchesStored: 2))
        #expect(state.alerts == ArrivalAlerts(desktop: true), "another window's switch, once both are stored")
    }

    @Test func theCategoriesScreenSaysWhatIsOn() {
        var state = makeState()
        var text = render(state).text
        #expect(text.contains("  Alerts: off  (b bell, d desktop)"))
        _ = state.press(.character("b"), .character("d"))
        text = render(state).text
        #expect(text.contains("  Alerts: bell, desktop  (b, d)"))
        _ = state.press(.character("b"))
        #expect(render(state).text.contains("  Alerts: desktop  (b, d)"))
    }

    /// The news of one frame is one alert, told to the newest position; a switch's sample
    /// is one apart, claimed by no position.
    @Test func alertsOfOneFrameAreOne() {
        let effects: [Effect] = [
            .alert(ArrivalAlerts(bell: true), text: "one", count: 2, through: 2), .setAlert(.bell, on: false),
            .alert(ArrivalAlerts(desktop: true), text: "Desktop notification on new messages is on", count: 1, through: nil),
            .alert(ArrivalAlerts(desktop: true), text: "three", count: 1, through: 3),
        ]
        let news = Effect.mergedAlert(effects, samples: false)
        #expect(news?.0 == ArrivalAlerts(bell: true, desktop: true))
        #expect(news?.text == "3 new: three")
        #expect(news?.through == 3)
        let sample = Effect.mergedAlert(effects, samples: true)
        #expect(sample?.0 == ArrivalAlerts(desktop: true))
        #expect(sample?.text == "Desktop notification on new messages is on")
        #expect(sample?.through == nil)
        #expect(Effect.mergedAlert([.quit], samples: false) == nil)
        #expect(Effect.mergedAlert([.quit], samples: true) == nil)
    }

    /// One switch pressed is one switch stored: a window never writes the other switch as it
    /// last saw it (which undid a switch made meanwhile in another window).
    @Test func aSwitchStoresOnlyItself() {
        var state = makeState()
        _ = state.reduce(.shared(SharedHomeState(selection: [], registration: nil, alerts: ArrivalAlerts(desktop: true))))
        #expect(state.press(.character("b")).first == .setAlert(.bell, on: true))
        #expect(state.press(.character("d")).first == .setAlert(.desktop, on: false))
    }

    /// Stored as `arrivalAlerts`; a defaults file from before loads with both off, and its
    /// other keys stay.
    @Test func theSwitchesAreKeptInTheDefaults() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bn-alerts-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("defaults.json")
        try Data(#"{"BreakingNewsCategories":["World"],"installationId":"abc","somethingNew":1}"#.utf8).write(to: url)
        let store = DefaultsStore(url: url)
        #expect(store.load().values.arrivalAlerts == .off)
        #expect(store.load().values.categories == ["World"])

        try store.update { $0.arrivalAlerts = ArrivalAlerts(bell: true) }
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.contains(#""arrivalAlerts":{"bell":true,"desktop":false}"#))
        #expect(text.contains(#""somethingNew":1"#))
        #expect(store.load().values.arrivalAlerts == ArrivalAlerts(bell: true))
        #expect(store.load().values.installationId == "abc")
    }
}
