/// Keys by name, as `config.json` writes them and the help shows them: a printable
/// character is itself (`x`, `J`, `?`, `|`); the others are `Up`, `Down`, `Left`, `Right`,
/// `Home`, `End`, `PgUp`, `PgDn`, `Tab`, `S-Tab`, `Enter`, `Esc`, `Space`, `Backspace`, `Del`,
/// `Ctrl-A`…`Ctrl-Y` but for C, H, I, J, M, Q and S, and `Alt-B`, `Alt-D`, `Alt-F` (names in any
/// case).
public enum KeyName {
    static let named: [(String, Key)] = [
        ("Up", .up), ("Down", .down), ("Left", .left), ("Right", .right), ("Home", .home), ("End", .end),
        ("PgUp", .pageUp), ("PgDn", .pageDown), ("Tab", .tab), ("S-Tab", .backTab), ("Enter", .enter),
        ("Esc", .escape), ("Space", .character(" ")), ("Backspace", .backspace), ("Del", .delete),
    ]

    /// The key `name` names, or nil.
    public static func parse(_ name: String) -> Key? {
        if name.count == 1, let character = name.first {
            guard !character.isWhitespace, character.unicodeScalars.allSatisfy({ $0.value >= 0x21 && $0.value != 0x7F }),
                !(0x80...0x9F).contains(character.unicodeScalars.first!.value)
            else { return nil }
            return .character(character)
        }
        let lowered = name.lowercased()
        if let (_, key) = named.first(where: { $0.0.lowercased() == lowered }) { return key }
        // Ctrl-C, -H, -I, -J, -M, -Q, -S and -Z never arrive as themselves (a signal, Backspace,
        // Tab, Enter, flow control, a suspension); terminals send Alt as ESC first, which the UI
        // reads as Alt only before b, d and f (Esc then another key stays Esc and that key).
        for (prefix, make, letters) in [("ctrl-", Key.control, "abdefgklnoprtuvwxy"), ("alt-", Key.alt, "bdf")]
        where lowered.hasPrefix(prefix) {
            let rest = lowered.dropFirst(prefix.count)
            guard rest.count == 1, let letter = rest.first, letters.contains(letter) else { return nil }
            return make(letter)
        }
        return nil
    }

    /// How the help and the footer write `key`.
    public static func label(_ key: Key) -> String {
        switch key {
        case .up: return "↑"
        case .down: return "↓"
        case .left: return "←"
        case .right: return "→"
        case .character(" "): return "Space"
        case .character(let c): return String(c)
        case .control(let c): return "Ctrl-" + c.uppercased()
        case .alt("\n"): return "Alt-Enter"
        case .alt(let c): return "Alt-" + c.uppercased()
        default: return named.first { $0.1 == key }?.0 ?? "?"
        }
    }
}
