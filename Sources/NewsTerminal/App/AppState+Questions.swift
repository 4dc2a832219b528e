import BreakingNewsKit
import Foundation

/// The keys that would change much at one press ask first: `s` that would leave no category
/// subscribed, `A` on more messages than the screen shows, and `q` when `config.json` says
/// `"confirmQuit": true`. Typing at a person's speed is not a burst, so these are what a
/// sentence typed on the wrong screen meets.
extension AppState {
    /// A key on a question: Enter (or q on a quit question) says yes; Esc, n or any other
    /// typed key says no.
    mutating func answer(_ question: Dialog, with key: Key) -> [Effect] {
        switch key {
        case .enter:
            dialog = nil
            return answeredYes(question)
        case .character("q") where question.confirm == .quit:
            // q on "quit?" is the answer, as in many a program.
            dialog = nil
            return answeredYes(question)
        case .escape, .character("n"):
            dialog = nil
        case .character:
            // Typing is not an answer: a sentence aimed at the wrong screen must not say yes
            // with its y. It says no.
            dialog = nil
            note("Not done: a question is answered with Enter")
        default: break
        }
        return []
    }

    /// `q`: quits, after asking when category changes are not subscribed (the draft is kept
    /// anyway).
    mutating func requestQuit() -> [Effect] {
        guard switches != storedSelection, !registering else {
            if confirmQuit {
                // `"confirmQuit": true` in config.json: q always asks.
                dialog = Dialog(
                    title: "Quit Breaking News?", message: "Quit, or stay (Esc).", isError: false, confirm: .quit,
                    confirmLabel: "quit")
                return []
            }
            quitting = true
            return [.quit]
        }
        let on = categories.filter { switches.contains($0) && !storedSelection.contains($0) }.map(\.name)
        let off = categories.filter { !switches.contains($0) && storedSelection.contains($0) }.map(\.name)
        let changes = [
            on.isEmpty ? nil : "\(on.joined(separator: ", ")) on", off.isEmpty ? nil : "\(off.joined(separator: ", ")) off",
        ].compactMap { $0 }.joined(separator: ", ")
        dialog = Dialog(
            title: "Quit without subscribing?",
            message: "Your category changes (\(changes)) are not subscribed. Quit and drop them, or stay and \(subscribeHint).",
            isError: false, confirm: .quit, confirmLabel: "quit")
        return []
    }

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
