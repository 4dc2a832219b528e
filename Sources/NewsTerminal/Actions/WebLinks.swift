/// The web links in a message: what `o` opens, `y` offers to copy, and the message view keeps
/// whole on one line. Only `http` and `https` links count; a `javascript:`, `file:` or any
/// other scheme in news is text, never a link.
public enum WebLinks {
    /// Every `http` and `https` URL in `text`, in order, each once.
    public static func find(in text: String) -> [String] {
        var links: [String] = []
        for link in ranges(in: text).map({ String(text[$0]) }) where !links.contains(link) { links.append(link) }
        return links
    }

    /// Whether `url` is a link `o` may open: `http://` or `https://` (any case) and a host,
    /// with no space or control character in it.
    public static func isWebLink(_ url: String) -> Bool {
        guard let rest = schemeEnd(url, at: url.startIndex) else { return false }
        return rest < url.endIndex && url[rest] != "/" && !url.unicodeScalars.contains(where: ends)
    }

    /// Where the links of `text` are.
    static func ranges(in text: String) -> [Range<String.Index>] {
        var result: [Range<String.Index>] = []
        var index = text.startIndex
        var previous: Character?
        while index < text.endIndex {
            let character = text[index]
            // A link starts a word: "xhttp://" is not one.
            if character == "h" || character == "H", !(previous.map { $0.isLetter || $0.isNumber } ?? false),
                let hostStart = schemeEnd(text, at: index), let end = linkEnd(text, from: hostStart)
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
    private static func schemeEnd(_ text: String, at start: String.Index) -> String.Index? {
        for scheme in ["https://", "http://"] {
            var index = start
            var matched = true
            for expected in scheme {
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
    /// and closing brackets the link did not open. Nil when no host is left.
    private static func linkEnd(_ text: String, from hostStart: String.Index) -> String.Index? {
        var end = hostStart
        while end < text.endIndex, !text[end].unicodeScalars.contains(where: ends) { end = text.index(after: end) }
        while end > hostStart {
            let last = text[text.index(before: end)]
            let body = text[hostStart..<text.index(before: end)]
            let unopened: Bool
            switch last {
            case ")": unopened = body.filter { $0 == "(" }.count < body.filter { $0 == ")" }.count + 1
            case "]": unopened = body.filter { $0 == "[" }.count < body.filter { $0 == "]" }.count + 1
            case ".", ",", ":", ";", "!", "?", "'", "’", "”", "»": unopened = true
            default: unopened = false
            }
            guard unopened else { break }
            end = text.index(before: end)
        }
        guard end > hostStart, text[hostStart] != "/" else { return nil }
        return end
    }
}
