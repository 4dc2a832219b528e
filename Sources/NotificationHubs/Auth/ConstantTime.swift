/// Comparisons of secrets in time that does not depend on where they differ.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes; the time depends on their lengths only.
    public static func equal(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        let (x, y) = (Array(a), Array(b))
        var difference = x.count ^ y.count
        for i in 0..<max(x.count, y.count) {
            difference |= Int((i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0))
        }
        return difference == 0
    }

    /// Whether two texts are the same, compared as UTF-8.
    public static func equal(_ a: String, _ b: String) -> Bool { equal(a.utf8, b.utf8) }
}
