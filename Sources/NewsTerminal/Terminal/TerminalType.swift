import CNcursesw
import Foundation

/// Whether the terminal `TERM` names can show the UI, asked of terminfo before curses starts:
/// curses itself would print its own raw error and exit 1, or draw garbage on `dumb`.
public enum TerminalType {
    /// Why the UI cannot run on this terminal, in one line; nil when it can.
    public static func problem(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let advice = "set TERM to your terminal's type (e.g. xterm-256color)"
        guard let name = environment["TERM"], !name.isEmpty else { return "TERM is not set; \(advice)" }
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.+-_")
        guard name.count <= 64, name.first != ".", name.unicodeScalars.allSatisfy(allowed.contains) else {
            return "TERM is not a terminal type name; \(advice)"
        }
        var known: Int32 = 0
        let usable = bn_terminal_can_draw(name, &known)
        guard known != 0 else { return "the terminal type '\(name)' is not known here (no terminfo entry); \(advice)" }
        guard usable != 0 else { return "the terminal type '\(name)' cannot move the cursor; \(advice)" }
        return nil
    }
}
