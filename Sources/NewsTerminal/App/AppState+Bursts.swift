import BreakingNewsKit
import Foundation

/// Keys that came faster than anyone types (`Key.burst`): text in a text field, never commands
/// anywhere else. A sentence typed on the wrong screen, or a paste the terminal did not
/// bracket, changes nothing.
extension AppState {
    /// The commands a held key repeats harmlessly: a burst of one of them, the same key over
    /// and over (the terminal's key repeat), moves as the keys say.
    static let repeatable: Set<Command> = [
        .up, .down, .left, .right, .pageUp, .pageDown, .top, .bottom, .nextMatch, .previousMatch,
    ]

    /// What a bracketed paste outside a text field says; a burst of words set aside says it too.
    static let pasteSetAside = "A paste goes into the message: press 2 for Compose"
    /// What a burst of keys alone (no space, no line break: a held key) set aside says.
    static let keysSetAside = "Keys that came at once were set aside: press them one at a time"

    mutating func handleBurst(_ text: String) -> [Effect] {
        // Each step takes what a field or the screen takes and hands back what is left (after
        // a search a line break ended, after the key that opened a field): a loop, so a paste
        // of thousands of lines costs no stack.
        var effects: [Effect] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            let (done, left) = burstStep(rest)
            effects += done
            rest = left
        }
        return effects
    }

    /// One step of a burst: its effects, and what is left of it for the next.
    private mutating func burstStep(_ text: Substring) -> ([Effect], Substring) {
        guard let first = text.first else { return ([], "") }
        // The command line of `|` takes text and runs only on Enter.
        if let prompt = pipePrompt {
            let line = String(text.reversed().drop { $0 == "\n" }.reversed())
            pipePrompt?.command = prompt.command + TextWidth.printable(line)
            return ([], "")
        }
        let overlay = dialog != nil || showHelp || chooser != nil
        if screen == .compose, !overlay {
            // Compose takes it in the message wherever the focus was.
            compose.focus = .text
            return (typeIntoField(String(text)), "")
        }
        if screen == .log, log.searching, !overlay {
            // The search takes its first line; a line break keeps it, and the rest is a burst
            // of its own on the Log (a `/` there begins another search).
            let line = text.prefix { $0 != "\n" }
            let effects = handleSearch(.paste(String(line)))
            guard line.endIndex < text.endIndex else { return (effects, "") }
            return (effects + handleSearch(.enter), text[text.index(after: line.endIndex)...])
        }
        let command = keyMap.command(for: Self.key(first), on: screen)
        if let command, Self.repeatable.contains(command), text.allSatisfy({ $0 == first }) {
            return (text.flatMap { handle(Self.key($0)) }, "")
        }
        if !overlay, log.picker == nil {
            // A key that opens a text field, then text: the field takes the text.
            switch command {
            case .search? where screen == .log, .pipe? where screen == .log, .show(.compose)?:
                let effects = handle(Self.key(first))
                let opened = pipePrompt != nil || log.searching || screen == .compose
                return (effects, opened ? text.dropFirst() : "")
            default: break
            }
        }
        note(text.contains { $0 == " " || $0 == "\n" || $0 == "\t" } ? Self.pasteSetAside : Self.keysSetAside)
        return ([], "")
    }

    /// A burst in the message field: pasted text. Enter after the text's last character is
    /// the key (typed ahead, it sends); a line break inside it is text, so a pasted block of
    /// lines never sends.
    private mutating func typeIntoField(_ text: String) -> [Effect] {
        let body = text.reversed().drop { $0 == "\n" }.reversed()
        let enters = text.count - body.count
        var effects = body.isEmpty ? [] : (handleTextField(.paste(String(body))) ?? [])
        if enters > 0, !body.contains("\n") {
            effects += handleTextField(.enter) ?? []
        } else if enters > 0 {
            effects += handleTextField(.paste(String(repeating: "\n", count: enters))) ?? []
        }
        return effects
    }

    /// The key a character of a burst stands for.
    static func key(_ character: Character) -> Key {
        character == "\n" ? .enter : character == "\t" ? .tab : .character(character)
    }
}
