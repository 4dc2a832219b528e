import BreakingNewsKit
import Foundation

/// Telling the user that news arrived while they work elsewhere: a bell, a desktop
/// notification, switched with `b` and `d` and kept for the home.
extension AppState {
    /// The alert for messages that just arrived (oldest first): none while both are off. In
    /// a burst, one alert at most every `alertSeconds`: what arrives in between is held and
    /// counted into the next one.
    mutating func arrivalAlert(for entries: [InboxEntry]) -> [Effect] {
        guard !alerts.isOff, let newest = entries.last else { return [] }
        alertPacing.heldText = newest.text
        alertPacing.heldThrough = newest.index
        alertPacing.heldCount += entries.count
        return releaseHeldAlert()
    }

    /// The held alert, once the quiet time after the last one is over.
    mutating func releaseHeldAlert() -> [Effect] {
        guard let text = alertPacing.heldText, alertPacing.quietUntil.map({ now >= $0 }) ?? true else { return [] }
        let (count, through) = (alertPacing.heldCount, alertPacing.heldThrough)
        alertPacing = AlertPacing(quietUntil: now.addingTimeInterval(alertSeconds))
        // Switched off meanwhile: the held messages go unannounced.
        return alerts.isOff ? [] : [.alert(alerts, text: text, count: count, through: through)]
    }

    /// `b` (the bell) or `d` (the desktop notification): switches it, stores that switch (and
    /// only that one) for the home and says so in the toast; switched on, it sounds (or shows)
    /// once in this window, so the user learns whether their terminal does it.
    mutating func switchAlert(bell: Bool) -> [Effect] {
        let kind: ArrivalAlerts.Switch = bell ? .bell : .desktop
        alerts[kind].toggle()
        alertSwitches += 1
        let on = alerts[kind]
        let name = bell ? "Bell" : "Desktop notification"
        // Counts no message: news arriving now is counted from one.
        toast = Toast(
            text: "\(name) on new messages: \(on ? "on" : "off")", expires: now.addingTimeInterval(toastSeconds), count: 0)
        var effects: [Effect] = [.setAlert(kind, on: on)]
        if on {
            effects.append(
                .alert(ArrivalAlerts(bell: bell, desktop: !bell), text: "\(name) on new messages is on", count: 1, through: nil))
        }
        return effects
    }

    /// What the categories screen says about the alerts, naming the keys that switch them
    /// (none when `config.json` left them none).
    var alertsLine: String {
        let on = [alerts.bell ? "bell" : nil, alerts.desktop ? "desktop" : nil].compactMap { $0 }
        let bell = keyName(.switchBell)
        let desktop = keyName(.switchDesktop)
        if on.isEmpty {
            let keys = [bell.map { "\($0) bell" }, desktop.map { "\($0) desktop" }].compactMap { $0 }
            return "Alerts: off" + (keys.isEmpty ? "" : "  (\(keys.joined(separator: ", ")))")
        }
        let keys = [bell, desktop].compactMap { $0 }
        return "Alerts: \(on.joined(separator: ", "))" + (keys.isEmpty ? "" : "  (\(keys.joined(separator: ", ")))")
    }

    /// How the screen names the key of `command` ("z", or the keys config.json gave it); nil
    /// when it has none (`"letterKeys": false` took its letter).
    func keyName(_ command: Command, on screen: ScreenID? = nil) -> String? {
        let label = keyMap.label(of: command, on: screen)
        return label.isEmpty ? nil : label
    }

    /// " · z undoes", or nothing when undo has no key.
    var undoHint: String { keyName(.undo, on: .log).map { " · \($0) undoes" } ?? "" }

    /// "press s", or "press Subscribe" when subscribe has no key.
    var subscribeHint: String { "press " + (keyName(.subscribe, on: .categories) ?? "Subscribe") }
}

/// The least time between two arrival alerts.
let alertSeconds: TimeInterval = 2

/// When the next arrival alert may sound, and what arrived since the last one.
struct AlertPacing: Sendable, Hashable {
    var quietUntil: Date?
    /// The newest message held back (its text and log position), and how many messages were.
    var heldText: String?
    var heldThrough: Int?
    var heldCount = 0
}

/// How news that arrived is told: the newest message, after `one` when it came alone, and
/// counted in a burst ("3 new: …").
func arrivalText(_ newest: String, count: Int, one: String = "") -> String {
    count == 1 ? one + newest : "\(count) new: \(newest)"
}

extension Effect {
    /// The alerts among `effects` as one, the switch's samples (`through` nil) or news: what
    /// any of them asks for, the messages of all of them counted, the newest text, the
    /// newest log position. Nil when there is none.
    static func mergedAlert(_ effects: [Effect], samples: Bool) -> (ArrivalAlerts, text: String, through: Int?)? {
        var merged: (alerts: ArrivalAlerts, text: String, count: Int, through: Int?)?
        for case .alert(let alerts, let text, let count, let through) in effects where (through == nil) == samples {
            let before = merged ?? (.off, "", 0, nil)
            merged = (
                ArrivalAlerts(bell: before.alerts.bell || alerts.bell, desktop: before.alerts.desktop || alerts.desktop), text,
                before.count + count, max(before.through ?? 0, through ?? 0)
            )
        }
        return merged.map { ($0.alerts, arrivalText($0.text, count: $0.count), samples ? nil : $0.through) }
    }
}
