/// Which messages of the received log are read: a set of log positions (from 1), kept as
/// sorted, disjoint, non-touching ranges, so "everything read" costs one range however long
/// the log, and a message marked unread in the middle costs two.
public struct ReadMarks: Sendable, Hashable {
    /// The ranges, ascending; no two overlap or touch.
    public private(set) var ranges: [ClosedRange<Int>] = []

    public init() {}

    /// Marks made of any ranges (overlapping, touching, in any order): sorted, then merged
    /// in one pass, so a long list costs its sort, not an insertion each.
    public init(_ ranges: some Sequence<ClosedRange<Int>>) {
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = self.ranges.last, range.lowerBound <= last.upperBound || Self.touches(last.upperBound, range.lowerBound)
            {
                self.ranges[self.ranges.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                self.ranges.append(range)
            }
        }
    }

    public var isEmpty: Bool { ranges.isEmpty }

    /// How many positions are marked (at most `Int.max`).
    public var count: Int {
        ranges.reduce(0) { total, range in
            let (sum, overflow) = total.addingReportingOverflow(range.upperBound &- range.lowerBound &+ 1)
            return overflow || range.upperBound &- range.lowerBound < 0 ? .max : sum
        }
    }

    public func contains(_ position: Int) -> Bool {
        guard let i = rangeIndex(atOrBefore: position) else { return false }
        return ranges[i].contains(position)
    }

    public mutating func insert(_ position: Int) { insert(position...position) }

    public mutating func insert(_ range: ClosedRange<Int>) {
        // The ranges that overlap or touch `range` are merged with it.
        var lower = range.lowerBound
        var upper = range.upperBound
        // Touching counts as overlapping; at the ends of Int there is nothing to touch.
        let first = ranges.partitioningIndex { $0.upperBound >= lower || Self.touches($0.upperBound, lower) }
        var last = first
        while last < ranges.count, ranges[last].lowerBound <= upper || Self.touches(upper, ranges[last].lowerBound) {
            lower = min(lower, ranges[last].lowerBound)
            upper = max(upper, ranges[last].upperBound)
            last += 1
        }
        ranges.replaceSubrange(first..<last, with: [lower...upper])
    }

    public mutating func remove(_ position: Int) {
        guard let i = rangeIndex(atOrBefore: position), ranges[i].contains(position) else { return }
        let range = ranges[i]
        var pieces: [ClosedRange<Int>] = []
        if range.lowerBound < position { pieces.append(range.lowerBound...(position - 1)) }
        if position < range.upperBound { pieces.append((position + 1)...range.upperBound) }
        ranges.replaceSubrange(i...i, with: pieces)
    }

    public mutating func formUnion(_ other: ReadMarks) {
        for range in other.ranges { insert(range) }
    }

    /// Removes every position of `other`.
    public mutating func subtract(_ other: ReadMarks) {
        for range in other.ranges { remove(range) }
    }

    /// Removes every position of `range`.
    public mutating func remove(_ range: ClosedRange<Int>) {
        // The ranges that overlap `range` lose that part; what is left of them on either side stays.
        let first = ranges.partitioningIndex { $0.upperBound >= range.lowerBound }
        var last = first
        var pieces: [ClosedRange<Int>] = []
        while last < ranges.count, ranges[last].lowerBound <= range.upperBound {
            let current = ranges[last]
            if current.lowerBound < range.lowerBound { pieces.append(current.lowerBound...(range.lowerBound - 1)) }
            if current.upperBound > range.upperBound { pieces.append((range.upperBound + 1)...current.upperBound) }
            last += 1
        }
        ranges.replaceSubrange(first..<last, with: pieces)
    }

    /// Whether `other`'s positions are all here.
    public func contains(_ other: ReadMarks) -> Bool {
        other.ranges.allSatisfy { range in
            guard let i = rangeIndex(atOrBefore: range.lowerBound) else { return false }
            return ranges[i].upperBound >= range.upperBound
        }
    }

    /// Whether position `b` comes right after `a` (no overflow at the ends of Int).
    private static func touches(_ a: Int, _ b: Int) -> Bool { a < b && a == b - 1 }

    /// The index of the last range starting at or before `position`.
    private func rangeIndex(atOrBefore position: Int) -> Int? {
        let after = ranges.partitioningIndex { $0.lowerBound > position }
        return after == 0 ? nil : after - 1
    }
}

extension Array {
    /// The first index whose element satisfies `isAfter`, for a predicate that is false and
    /// then true along the array (binary search).
    fileprivate func partitioningIndex(where isAfter: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if isAfter(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
