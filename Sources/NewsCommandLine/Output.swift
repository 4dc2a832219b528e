import BreakingNewsKit
import Foundation

/// Prints to standard output; what came from the network cannot drive the terminal.
public func say(_ text: String) {
    print(TerminalText.lines(text))
}

/// Prints one message to standard error, as safely as `say`, on one line (a hub's error
/// detail may hold line breaks; it cannot make more lines of its own) unless `keepingLines`.
public func printError(_ text: String, keepingLines: Bool = false) {
    let safe = keepingLines ? TerminalText.lines(text) : TerminalText.line(text)
    FileHandle.standardError.write(Data((safe + "\n").utf8))
}

/// The local side of every command, with its warning (a corrupt defaults file) printed once.
public func openProfile(printingWarning: Bool = true) throws -> NewsProfile {
    let catalog: NewsCatalog
    do {
        catalog = try NewsCatalog.load()
    } catch {
        throw CommandFailure("\(error)", exitCode: .failure)
    }
    let profile: NewsProfile
    do {
        profile = try NewsProfile(catalog: catalog)
    } catch {
        throw CommandFailure("cannot open the user defaults: \(error.localizedDescription)", exitCode: .failure)
    }
    if printingWarning, let warning = profile.warning { printError("warning: \(warning)") }
    return profile
}
