import BreakingNewsKit
import Foundation
import LocalHubSupport

/// The world outside the window that the news reaches: the browser, the clipboard, a command.
extension TerminalApp {
    /// Runs the effects of `asked` that need the terminal; true when a program had it (the
    /// screen is to be drawn again). What each came to is said through the queue.
    func runActions(_ asked: [Effect], on terminal: Terminal, config: UserConfig) -> Bool {
        var suspended = false
        let environment = ProcessInfo.processInfo.environment
        for effect in asked {
            switch effect {
            case .copy(let text, let what):
                queue.push(.actionDone(copy(text, what: what, config: config, environment: environment, terminal: terminal)))
            case .editMessage(let text):
                queue.push(editMessage(text, environment: environment, terminal: terminal))
                suspended = true
            case .openLink(let url):
                queue.push(.actionDone(openLink(url, environment: environment, terminal: terminal)))
                suspended = true
            case .pipe(let text, let command):
                // Its output is on the terminal: the news goes with its controls made harmless,
                // as the UI shows it (line feeds and tabs kept).
                queue.push(.actionDone(pipe(TerminalText.lines(text), to: command, terminal: terminal)))
                suspended = true
            default:
                break
            }
        }
        return suspended
    }

    /// Opens `url` with the first of `BrowserCommand.candidates` that is installed and ends
    /// well, on the terminal (a terminal browser needs it); returns what to say.
    func openLink(_ url: String, environment: [String: String], terminal: Terminal) -> String {
        guard WebLinks.isWebLink(url) else { return "Only http and https links are opened" }
        var failure: String?
        for argv in BrowserCommand.candidates(browser: environment["BROWSER"], url: url) {
            guard let program = ChildProcess.executable(named: argv[0], searchPath: environment["PATH"]) else { continue }
            let name = URL(fileURLWithPath: program).lastPathComponent
            var outcome: Result<Int32, Error> = .success(0)
            runOutside(terminal) { outcome = Result { try ChildProcess.runInForeground([program] + argv.dropFirst()) } }
            switch outcome {
            case .success(0): return "Opened \(url) with \(name)"
            case .success(let status): failure = "\(name) ended with status \(status)"
            case .failure(let error): failure = "\(error)"
            }
        }
        if let failure { return "Could not open \(url): \(failure)" }
        let browser = (environment["BROWSER"] ?? "").isEmpty ? "BROWSER is not set" : "no command of BROWSER is installed"
        return "Could not open \(url): \(browser), and xdg-open is not installed"
    }

    /// Runs `command` with `/bin/sh -c`, `text` and a line feed on its standard input (never in
    /// the command's text), on the terminal; then waits for Enter, so its output can be read.
    func pipe(_ text: String, to command: String, terminal: Terminal) -> String {
        guard let input = Self.inputPipe(text + "\n") else { return "Could not pipe the message: no pipe" }
        defer { close(input) }
        var outcome: Result<Int32, Error> = .success(0)
        runOutside(terminal) {
            outcome = Result { try ChildProcess.runInForeground(["/bin/sh", "-c", command], input: input) }
            let said: String
            switch outcome {
            case .success(let status): said = "exit status \(status)"
            case .failure(let error): said = "\(error)"
            }
            Self.waitForEnter("\n[\(TerminalText.line(command)): \(said)] Press Enter to go back to Breaking News ")
        }
        switch outcome {
        case .success(let status): return "Piped to \(command): exit status \(status)"
        case .failure(let error): return "Could not pipe to \(command): \(error)"
        }
    }

    /// The reading end of a pipe holding `text`, for a program's standard input (the caller
    /// closes it). Written before the program starts, so nothing waits on it: a message is a
    /// few kB and a pipe holds 64 kB; what does not fit is left out.
    static func inputPipe(_ text: String) -> Int32? {
        var ends: [Int32] = [-1, -1]
        guard Glibc.pipe(&ends) == 0 else { return nil }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(ends[1], $0.baseAddress, $0.count) }
            if count <= 0 { break }
            written += count
        }
        close(ends[1])
        return ends[0]
    }

    /// Gives the terminal to `body`, Ctrl-C included.
    func runOutside(_ terminal: Terminal, _ body: () -> Void) {
        externalRunning.withLock { $0 = true }
        defer { externalRunning.withLock { $0 = false } }
        terminal.suspend(body)
    }

    /// Says `prompt` on the terminal and reads up to a line feed (or the end of input).
    private static func waitForEnter(_ prompt: String) {
        let bytes = Array(prompt.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        var byte: UInt8 = 0
        while true {
            let count = Glibc.read(STDIN_FILENO, &byte, 1)
            if count < 0, errno == EINTR { continue }
            if count <= 0 || byte == 10 || byte == 13 { return }
        }
    }
}
