/// Which messages of the received log are read: a set of log positions (from 1), kept as
/// sorted, disjoint, non-touching ranges, so "everything read" costs one range however long
/// the log, and a message marked unread in the middle costs two.
public struct ReadMarks: Sendable, Hashable {
    /// The ranges, ascending; no two overlap or touch.
    public private(set) var ranges: [ClosedRange<Int>] = []

    public init() {}

    /// Marks made of any ranges (overlapping, touching, unsorted, empty ones dropped).
    public init(_ ranges: some Sequence<ClosedRange<Int>>) {
        for range in ranges { insert(range) }
    }

    public var isEmpty: Bool { ranges.isEmpty }

    /// How many positions are marked.
    public var count: Int { ranges.reduce(0) { $0 + $1.count } }

    public func contains(_ position: Int) -> Bool {
        guard let i = rangeIndex(atOrBefore: position) else { return false }
        return ranges[i].contains(position)
    }

    public mutating func insert(_ position: Int) { insert(position...position) }

    public mutating func insert(_ range: ClosedRange<Int>) {
        // The ranges that overlap or touch `range` are merged with it.
        var lower = range.lowerBound
        var upper = range.upperBound
        let first = ranges.partitioningIndex { $0.upperBound >= lower - 1 }
        var last = first
        while last < ranges.count, ranges[last].lowerBound <= upper + 1 {
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

/// A change to the read marks, applied to what is on disk under the log's lock, so changes
/// made by several windows never undo each other.
public enum ReadChange: Sendable, Hashable {
    case read(ReadMarks)
    case unread(Int)
}
