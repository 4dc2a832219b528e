import BreakingNewsKit
import Foundation
import LocalHubSupport

/// The clipboard (`y`) and the user's own editor (Ctrl-X Ctrl-E): programs outside the window
/// that the screen thread runs for a moment.
extension TerminalApp {
    /// Whether the window runs inside tmux.
    static func insideTmux(_ environment: [String: String]) -> Bool { !(environment["TMUX"] ?? "").isEmpty }

    /// Puts `text` on a clipboard: the `copyCommand` of config.json when set (the text on its
    /// standard input); inside tmux, tmux's buffer (`load-buffer -w`, which since tmux 3.2 also
    /// hands it to the outer terminal's clipboard); else OSC 52. Returns what to say.
    func copy(_ text: String, what: String, config: UserConfig, environment: [String: String], terminal: Terminal) -> String {
        // The news with its controls made harmless, as the UI shows it (line feeds kept).
        let text = TerminalText.lines(text)
        if let command = config.copyCommand {
            let status = Self.run(["/bin/sh", "-c", command], input: text)
            guard status == 0 else {
                return "Could not copy \(what): \(command) " + (status.map { "ended with status \($0)" } ?? "did not start")
            }
            return "Copied \(what) with \(command)"
        }
        let insideTmux = Self.insideTmux(environment)
        if insideTmux, let tmux = ChildProcess.executable(named: "tmux", searchPath: environment["PATH"]) {
            // `-w` (tmux 3.2 and later) also sets the outer terminal's clipboard; an older tmux
            // refuses it, and takes the buffer without.
            if Self.run([tmux, "load-buffer", "-w", "-"], input: text) == 0
                || Self.run([tmux, "load-buffer", "-"], input: text) == 0
            {
                return "Copied \(what) to tmux's buffer (prefix ] pastes it)"
            }
        }
        // tmux passes an application's OSC 52 on only wrapped for passthrough.
        terminal.alert(OSCSequence.clipboard(text, insideTmux: insideTmux))
        return "Sent \(what) to the terminal's clipboard (OSC 52)"
    }

    /// Runs `argv` with `input` on its standard input, its output and errors thrown away; its
    /// exit status, or nil when it could not start.
    private static func run(_ argv: [String], input: String) -> Int32? {
        guard let pipe = inputPipe(input) else { return nil }
        defer { close(pipe) }
        return try? ChildProcess.run(argv, input: pipe)
    }

    /// The editor the user named (`$VISUAL`, then `$EDITOR`), else Debian's `editor`, `vi` or
    /// `nano`, whichever is installed; nil when there is none.
    static func editorCommand(_ environment: [String: String]) -> String? {
        for name in ["VISUAL", "EDITOR"] {
            if let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty { return value }
        }
        return ["editor", "vi", "nano"].first { ChildProcess.executable(named: $0, searchPath: environment["PATH"]) != nil }
    }

    /// Writes `text` to a file of its own (owner only), gives the terminal to the editor on it,
    /// as mutt does, and answers with what the editor saved; the field stays as it was when the
    /// editor fails.
    func editMessage(_ text: String, environment: [String: String], terminal: Terminal) -> Message {
        guard let editor = Self.editorCommand(environment) else {
            return .actionDone("Set EDITOR (or VISUAL) to write the message in your editor: none of editor, vi, nano is here")
        }
        let name = URL(fileURLWithPath: String(editor.split(separator: " ").first ?? "")).lastPathComponent
        var template = Array(
            FileManager.default.temporaryDirectory.appendingPathComponent("breaking-news-message-XXXXXX.txt").path.utf8CString)
        let fd = mkstemps(&template, 4)
        guard fd >= 0 else { return .actionDone("Could not make a file for the editor: \(String(cString: strerror(errno)))") }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { unlink(path) }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        // Editors keep a file's last line ended: one is given, and taken off again below.
        handle.write(Data((text.isEmpty || text.hasSuffix("\n") ? text : text + "\n").utf8))
        try? handle.close()
        var outcome: Result<Int32, Error> = .success(0)
        // The editor's own words go through the shell, as git and mutt run them ("code -w"),
        // the file as "$1", never in the command's text.
        runOutside(terminal) {
            outcome = Result { try ChildProcess.runInForeground(["/bin/sh", "-c", editor + " \"$1\"", "breaking-news", path]) }
        }
        switch outcome {
        case .success(0): break
        case .success(let status): return .actionDone("\(name) ended with status \(status): the message is as it was")
        case .failure(let error): return .actionDone("Could not run \(name): \(error)")
        }
        guard let data = FileManager.default.contents(atPath: path), data.count <= 65_536 else {
            return .actionDone("What \(name) saved cannot be read or is over 64 kB: the message is as it was")
        }
        var saved = String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
        while saved.hasSuffix("\n") { saved.removeLast() }
        return .edited(saved)
    }
}
