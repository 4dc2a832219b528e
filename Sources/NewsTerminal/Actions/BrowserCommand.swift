/// How a link is opened, as the `BROWSER` convention has it: the variable holds one or more
/// commands separated by `:`, tried in turn; in each, `%s` stands for the URL (`%%` for a
/// `%`), and a command without `%s` gets the URL as its last argument. Without `BROWSER`,
/// `xdg-open`, which is also the last resort after them. A command is split into words at
/// spaces and run directly, never by a shell: the URL is always exactly one argument (or
/// inside one, where `%s` sits in a word) whatever it holds.
public enum BrowserCommand {
    /// The argument vectors to try for `url`, in order; each starts with a program's name or
    /// path.
    public static func candidates(browser: String?, url: String) -> [[String]] {
        var result: [[String]] = []
        for alternative in (browser ?? "").split(separator: ":") {
            let words = alternative.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard !words.isEmpty else { continue }
            let substituted = words.map { substitute(url, into: $0) }
            let argv = words.contains { $0.contains("%s") } ? substituted : substituted + [url]
            if !result.contains(argv) { result.append(argv) }
        }
        let fallback = ["xdg-open", url]
        if !result.contains(fallback) { result.append(fallback) }
        return result
    }

    /// `word` with each `%s` replaced by `url` and each `%%` by `%`, in one pass, so a `%` in
    /// the URL is never read as a directive.
    static func substitute(_ url: String, into word: String) -> String {
        var out = ""
        var characters = word.makeIterator()
        while let character = characters.next() {
            guard character == "%" else {
                out.append(character)
                continue
            }
            switch characters.next() {
            case "s": out += url
            case "%": out.append("%")
            case let other?: out += "%" + String(other)
            case nil: out.append("%")
            }
        }
        return out
    }
}
