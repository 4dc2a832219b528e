import BreakingNewsKit
import Foundation

/// What the news lets you do: open a link (`o`), copy the message or a link (`y`), pipe the
/// message to a command (`|`), from the Log's selected row or the message view.
extension AppState {
    mutating func act(_ command: Command, on entry: InboxEntry) -> [Effect] {
        let links = WebLinks.find(in: entry.text)
        switch command {
        case .openLink:
            guard let first = links.first else {
                note("No http or https link in this message")
                return []
            }
            guard links.count > 1 else { return open(first) }
            chooser = LinkChooser(purpose: .open, choices: links, labels: links)
            return []
        case .copy:
            guard !links.isEmpty else { return copy(entry.text, what: "the message") }
            chooser = LinkChooser(purpose: .copy, choices: [entry.text] + links, labels: ["The whole message"] + links)
            return []
        case .pipe:
            pipePrompt = PipePrompt(text: entry.text, command: lastPipeCommand)
            return []
        default:
            return []
        }
    }

    private mutating func open(_ link: String) -> [Effect] {
        // Checked again here: only what `WebLinks` finds reaches this, but nothing else may.
        guard WebLinks.isWebLink(link) else {
            note("Only http and https links are opened")
            return []
        }
        note("Opening \(link)")
        return [.openLink(link)]
    }

    /// The runtime copies it, and says where to.
    private func copy(_ text: String, what: String) -> [Effect] { [.copy(text, what: what)] }

    /// The link chooser's keys: up and down (the arrows, or the keys bound to them), a digit
    /// for its line, Enter to take the line, Esc or q to cancel.
    mutating func handleChooser(_ key: Key) -> [Effect] {
        guard var shown = chooser else { return [] }
        let bound = keyMap.command(for: key, on: .log)
        switch key {
        case .up, .character("k"),
            _ where bound == .up:
            shown.selected = max(0, shown.selected - 1)
        case .down, .character("j"),
            _ where bound == .down:
            shown.selected = min(shown.choices.count - 1, shown.selected + 1)
        case .home, .character("g"): shown.selected = 0
        case .end, .character("G"): shown.selected = shown.choices.count - 1
        case .escape, .character("q"):
            chooser = nil
            return []
        case .enter, .character(" "):
            chooser = nil
            return take(shown, shown.selected)
        case .character(let c) where c.wholeNumberValue.map({ (1...shown.choices.count).contains($0) }) == true:
            chooser = nil
            return take(shown, c.wholeNumberValue! - 1)
        default:
            break
        }
        chooser = shown
        return []
    }

    private mutating func take(_ shown: LinkChooser, _ index: Int) -> [Effect] {
        let choice = shown.choices[index]
        switch shown.purpose {
        case .open: return open(choice)
        case .copy: return copy(choice, what: index == 0 ? "the message" : "the link")
        }
    }

    /// The chooser's lines, numbered, the selected one marked.
    func chooserLines() -> [String] {
        guard let shown = chooser else { return [] }
        return shown.labels.enumerated().map { i, label in
            (i == shown.selected ? "▸ " : "  ") + (i < 9 ? "\(i + 1) " : "  ") + label
        }
    }

    /// The command line of `|`, typed in the footer: every printable key is text (the keys a
    /// user bound among them); Enter runs it, Esc cancels.
    mutating func handlePipePrompt(_ key: Key) -> [Effect] {
        guard var prompt = pipePrompt else { return [] }
        switch key {
        case .character(let c): prompt.command.append(c)
        case .paste(let text), .burst(let text): prompt.command += TextWidth.printable(text)
        case .backspace:
            if !prompt.command.isEmpty { prompt.command.removeLast() }
        case .control("u"): prompt.command = ""
        case .escape:
            pipePrompt = nil
            return []
        case .enter:
            pipePrompt = nil
            let command = prompt.command.trimmingCharacters(in: .whitespaces)
            guard !command.isEmpty else { return [] }
            lastPipeCommand = command
            return [.pipe(text: prompt.text, command: command)]
        default:
            break
        }
        pipePrompt = prompt
        return []
    }
}
