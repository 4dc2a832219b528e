import BreakingNewsKit
import Foundation

/// The keys that would change much at one press ask first: `s` that would leave no category
/// subscribed, `A` on more messages than the screen shows, and `q` when `config.json` says
/// `"confirmQuit": true`. Typing at a person's speed is not a burst, so these are what a
/// sentence typed on the wrong screen meets.
extension AppState {
    /// Runs what a question's yes stands for.
    mutating func answeredYes(_ question: Dialog) -> [Effect] {
        if let effect = question.confirm { return confirmed(effect) }
        if let command = question.confirmCommand, screen == .log { return logCommand(command) }
        return []
    }

    /// `A` on more unread messages than a screenful asks; true when it did.
    mutating func askBeforeMarkingRead() -> Bool {
        let state = self
        let count = items.lazy.filter { state.passesFilter($0) && state.isUnread($0) }.count
        guard count > logPageSize else { return false }
        let which = log.filter.map { "\($0.name) " } ?? ""
        dialog = Dialog(
            title: "Mark \(count) messages read?",
            message:
                "Every unread \(which)message shown, \(count) of them, becomes read"
                + (keyName(.undo, on: .log).map { " (\($0) undoes it)." } ?? "."), isError: false,
            confirmLabel: "mark read", confirmCommand: .markShownRead)
        return true
    }

    /// Subscribe with every category off asks: news would stop reaching this terminal.
    mutating func askBeforeSubscribingToNone() -> Bool {
        guard switches.isEmpty else { return false }
        dialog = Dialog(
            title: "Subscribe to no category?",
            message:
                "Every category is off: news stops reaching this terminal. Subscribe to none, or stay (Esc) and switch some on.",
            isError: false, confirm: .subscribe([]), confirmLabel: "subscribe to none")
        return true
    }
}
