import BreakingNewsKit
import Foundation

/// The tutorial's switch screen: six categories, each with a switch, and Subscribe.
enum CategoriesScreen {
    /// The first category's row: under the title and a blank line, or right under the title
    /// on a short screen.
    static func firstRow(_ state: AppState) -> Int {
        state.geometry.isCompact ? ScreenGeometry.contentTop + 1 : ScreenGeometry.listTop
    }

    /// The Subscribe button's row: a blank line below the list, none on a short screen.
    static func buttonRow(_ state: AppState) -> Int {
        firstRow(state) + state.categories.count + (state.geometry.isCompact ? 0 : 1)
    }

    static func draw(_ state: AppState, _ c: Canvas) {
        c.text("  Breaking News", row: ScreenGeometry.contentTop, column: 0, style: Style(bold: true))
        c.text(
            "— choose the categories that reach this terminal", row: ScreenGeometry.contentTop, column: 17,
            style: Style(color: .muted))
        let unread = state.unread
        let firstRow = firstRow(state)
        for (i, category) in state.categories.enumerated() {
            let row = firstRow + i
            let focused = state.categoryCursor == i
            let on = state.switches.contains(category)
            c.text(focused ? " ▸" : "  ", row: row, column: 0, style: Style(bold: true, color: .accent))
            c.text(
                on ? "[  ON ]" : "[ OFF ]", row: row, column: 3, style: Style(bold: on, reverse: on, color: on ? .good : .muted))
            c.text(category.name, row: row, column: 11, style: Style(bold: focused, underline: focused), width: 14)
            if let count = unread[category.name] {
                c.text("\(count) unread", row: row, column: 26, style: Style(color: .accent))
            }
        }
        let buttonRow = buttonRow(state)
        let onButton = state.categoryCursor == state.categories.count
        c.text(onButton ? " ▸" : "  ", row: buttonRow, column: 0, style: Style(bold: true, color: .accent))
        c.text(
            state.registering ? "[ Subscribing… ]" : "[ Subscribe ]", row: buttonRow, column: 3,
            style: Style(bold: true, reverse: onButton))
        var row = buttonRow + (state.geometry.isCompact ? 1 : 2)
        let (status, color) = registrationText(state)
        for line in Canvas.wrap(status, width: c.columns - 4).prefix(2) {
            c.text("  " + line, row: row, column: 0, style: Style(color: color))
            row += 1
        }
        // Why the hub cannot be reached, whole: the header has room for the state only.
        if let reason = connectionProblem(state) {
            for line in Canvas.wrap("Hub: " + reason, width: c.columns - 4).prefix(5) {
                c.text("  " + line, row: row, column: 0, style: Style(color: .warning))
                row += 1
            }
        }
        if state.switches != state.storedSelection, !state.registering {
            c.text(
                "  Unsaved changes: \(state.subscribeHint)\(state.keyName(.subscribe, on: .categories) == nil ? "" : " (or Subscribe)") to store and register them.",
                row: row, column: 0,
                style: Style(color: .warning))
            row += 1
        }
        c.text("  " + state.alertsLine, row: row + 1, column: 0, style: Style(color: state.alerts.isOff ? .muted : .accent))
    }

    static func registrationText(_ state: AppState) -> (String, Style.Color) {
        if state.registering { return ("Registering…", .warning) }
        guard let record = state.registration else {
            return ("Not registered yet: choose categories and \(state.subscribeHint).", .muted)
        }
        let names = record.categories.isEmpty ? "no categories" : record.categories.joined(separator: ", ")
        let at = DisplayTime.short(record.at, now: state.now)
        switch record.state {
        case .registered: return ("✓ Registered \(names) at \(at)", .good)
        case .pending: return ("… Pending since \(at): the hub could not be reached; retrying", .warning)
        case .failed: return ("✗ Failed at \(at): \(record.detail ?? "refused")", .bad)
        }
    }

    /// The category index of a screen row on the categories screen, for mouse clicks.
    static func categoryRow(forScreenRow row: Int, _ state: AppState) -> Int? {
        let index = row - firstRow(state)
        if index >= 0, index < state.categories.count { return index }
        if row == buttonRow(state) { return state.categories.count }
        return nil
    }

    /// What keeps this terminal from its hub, while it does.
    static func connectionProblem(_ state: AppState) -> String? {
        switch state.connection {
        case .reconnecting(_, let reason): return reason.isEmpty ? nil : reason
        // Not registered: the registration line says so already, and what to do.
        case .offline(.notRegistered) where state.registration == nil || state.registering: return nil
        case .offline(let reason): return reason.description
        case .connecting, .online, .stopped: return nil
        }
    }
}

/// The keys of the categories screen.
extension AppState {
    mutating func categoriesCommand(_ command: Command) -> [Effect] {
        switch command {
        case .up: categoryCursor = max(0, categoryCursor - 1)
        case .down: categoryCursor = min(categories.count, categoryCursor + 1)
        case .top: categoryCursor = 0
        case .bottom: categoryCursor = categories.count - 1
        case .toggle:
            if categoryCursor == categories.count { return subscribe() }
            let category = categories[categoryCursor]
            if switches.contains(category) { switches.remove(category) } else { switches.insert(category) }
        case .subscribe:
            return subscribe()
        default: break
        }
        return []
    }

    mutating func subscribe() -> [Effect] {
        guard !registering, !askBeforeSubscribingToNone() else { return [] }
        registering = true
        storedSelection = switches
        return [.subscribe(categories.filter(switches.contains))]
    }

}
