/// The web links in a message: what `o` opens, `y` offers to copy, and the message view keeps
/// whole on one line. Only `http` and `https` links count; a `javascript:`, `file:` or any
/// other scheme in news is text, never a link.
public enum WebLinks {
    /// Every `http` and `https` URL in `text`, in order, each once.
    public static func find(in text: String) -> [String] {
        var links: [String] = []
        var seen: Set<String> = []
        for link in ranges(in: text).map({ String(text[$0]) }) where seen.insert(link).inserted { links.append(link) }
        return links
    }

    /// Whether `url` is a link `o` may open: `http://` or `https://` (any case) and a host,
    /// with no space or control character in it.
    public static func isWebLink(_ url: String) -> Bool {
        var visits = 0
        guard let rest = schemeEnd(url, at: url.startIndex, visits: &visits) else { return false }
        return rest < url.endIndex && url[rest] != "/" && !url.unicodeScalars.contains(where: ends)
    }

    /// Where the links of `text` are.
    static func ranges(in text: String) -> [Range<String.Index>] {
        var visits = 0
        return ranges(in: text, visits: &visits)
    }

    /// Where the links of `text` are, adding to `visits` every character the scan looks at:
    /// the tests hold it to a few times the text's length, so the scan stays linear.
    static func ranges(in text: String, visits: inout Int) -> [Range<String.Index>] {
        var result: [Range<String.Index>] = []
        var index = text.startIndex
        var previous: Character?
        while index < text.endIndex {
            let character = text[index]
            visits += 1
            // A link starts a word: "xhttp://" is not one.
            if character == "h" || character == "H", !(previous.map { $0.isLetter || $0.isNumber } ?? false),
                let hostStart = schemeEnd(text, at: index, visits: &visits),
                let end = linkEnd(text, from: hostStart, visits: &visits)
            {
                result.append(index..<end)
                index = end
                previous = nil
                continue
            }
            previous = character
            index = text.index(after: index)
        }
        return result
    }

    /// The index after `http://` or `https://` (any case) at `start`, if one is there.
    private static func schemeEnd(_ text: String, at start: String.Index, visits: inout Int) -> String.Index? {
        for scheme in ["https://", "http://"] {
            var index = start
            var matched = true
            for expected in scheme {
                visits += 1
                guard index < text.endIndex, text[index].lowercased() == String(expected) else {
                    matched = false
                    break
                }
                index = text.index(after: index)
            }
            if matched { return index }
        }
        return nil
    }

    /// Characters that end a link: spaces, controls, and the quotes and angle brackets
    /// text puts around one.
    private static func ends(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x20, 0x7F...0xA0: return true
        default:
            return scalar.properties.isWhitespace || scalar.properties.generalCategory == .format && scalar.value != 0x200D
                || "<>\"".unicodeScalars.contains(scalar)
                || [.lineSeparator, .paragraphSeparator].contains(scalar.properties.generalCategory)
        }
    }

    /// Where the link whose host starts at `hostStart` ends: at the first character that ends
    /// links, less the punctuation that ends a sentence (`.`, `,`, `:`, `;`, `!`, `?`, quotes)
    /// and closing brackets the link did not open. Nil when no host is left. The brackets are
    /// counted once on the way out and taken off as the end moves back, so each character is
    /// looked at at most twice.
    private static func linkEnd(_ text: String, from hostStart: String.Index, visits: inout Int) -> String.Index? {
        guard hostStart < text.endIndex, text[hostStart] != "/" else { return nil }
        var end = hostStart
        var parentheses = (open: 0, close: 0)
        var brackets = (open: 0, close: 0)
        while end < text.endIndex {
            let character = text[end]
            visits += 1
            if character.unicodeScalars.contains(where: ends) { break }
            switch character {
            case "(": parentheses.open += 1
            case ")": parentheses.close += 1
            case "[": brackets.open += 1
            case "]": brackets.close += 1
            default: break
            }
            end = text.index(after: end)
        }
        while end > hostStart {
            let before = text.index(before: end)
            let last = text[before]
            visits += 1
            // The counts are of the link up to `end`; without `last`, the body has one closing
            // bracket fewer, and `last` closes none of it when the body opens no more than it closes.
            let unopened: Bool
            switch last {
            case ")":
                parentheses.close -= 1
                unopened = parentheses.open <= parentheses.close
            case "]":
                brackets.close -= 1
                unopened = brackets.open <= brackets.close
            case ".", ",", ":", ";", "!", "?", "'", "’", "”", "»": unopened = true
            default: unopened = false
            }
            guard unopened else { break }
            end = before
        }
        return end > hostStart ? end : nil
    }
}
