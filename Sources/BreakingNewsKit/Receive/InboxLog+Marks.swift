import Foundation
import LocalHubSupport
import NotificationHubs

/// What the windows of a home have done to the messages of its log: which are read, which
/// deleted — log positions, kept in `inbox-state.json` as ranges. A deleted message stays in
/// the log (positions never move, and the stream never brings it back) and is shown nowhere.
public struct InboxMarks: Sendable, Hashable {
    public var read: ReadMarks
    public var deleted: ReadMarks

    public init(read: ReadMarks = ReadMarks(), deleted: ReadMarks = ReadMarks()) {
        self.read = read
        self.deleted = deleted
    }

    /// `change` applied.
    public mutating func apply(_ change: ReadChange) {
        switch change {
        case .read(let marks): read.formUnion(marks)
        case .unread(let marks): read.subtract(marks)
        case .delete(let marks): deleted.formUnion(marks)
        case .restore(let marks): deleted.subtract(marks)
        }
    }
}

/// A change to the marks, applied to what is on disk under the log's lock, so changes made
/// by several windows never undo each other.
public enum ReadChange: Sendable, Hashable {
    case read(ReadMarks)
    case unread(ReadMarks)
    /// Messages deleted: shown in no window, listed by no command.
    case delete(ReadMarks)
    /// Deleted messages back (an undo).
    case restore(ReadMarks)
}

extension InboxLog {
    /// Unread messages by category ("" for messages without one); deleted ones do not count.
    public var unreadCounts: [String: Int] {
        state.withLock { state in
            var counts: [String: Int] = [:]
            for entry in state.entries
            where !state.marks.read.contains(entry.index) && !state.marks.deleted.contains(entry.index) {
                counts[entry.category ?? "", default: 0] += 1
            }
            return counts
        }
    }

    /// The positions read, as this process last saw them.
    public var readMarks: ReadMarks { state.withLock { $0.marks.read } }

    /// The marks, as this process last saw them.
    public var marks: InboxMarks { state.withLock { $0.marks } }

    /// Marks `entries` read (what `log --mark-read` printed).
    public func markRead(_ entries: [InboxEntry]) {
        guard !entries.isEmpty else { return }
        apply(.read(ReadMarks(entries.map { $0.index...$0.index })))
    }

    /// Applies `change` to the marks on disk, which every window of the home shares: under
    /// the log's lock, to what is there now, so no window undoes another's marks. Returns
    /// the marks as they now are.
    @discardableResult
    public func apply(_ change: ReadChange) -> InboxMarks {
        withFileLock {
            var marks = loadMarks()
            if case .restore(let positions) = change {
                // A message pruned meanwhile (another window's launch) stays deleted: only
                // its stub is left.
                _ = readNewLines()
                let stubs = state.withLock { state in
                    state.entries.lazy.filter { $0.pruned && positions.contains($0.index) }.map { $0.index...$0.index }
                }
                var kept = positions
                kept.subtract(ReadMarks(stubs))
                marks.apply(.restore(kept))
            } else {
                marks.apply(change)
            }
            saveMarks(marks)
            return marks
        }
    }

    /// Reads the marks other processes moved; returns them.
    @discardableResult
    public func reloadMarks() -> InboxMarks {
        let disk = withFileLock { loadMarks() }
        state.withLock { $0.marks = disk }
        return disk
    }

    /// The file the marks live in, for watchers.
    public var readMarksFile: URL { stateURL }

    /// Positions a marks file may name: a hostile or damaged file cannot make a range that
    /// overflows or costs memory.
    static let markablePositions = 1...1_000_000_000
    static let maximumRanges = 100_000

    /// The marks in `url`: `{"read": [[first, last], …], "deleted": [[first, last], …]}`, or
    /// the older per-category form `{"readThrough": {"World": 12}}` (every message of the
    /// category up to that position), read against `entries` (asked for only then). Anything
    /// else reads as nothing read and `damaged`.
    static func readMarks(_ url: URL, entries: () -> [InboxEntry]) -> (marks: InboxMarks, damaged: Bool) {
        guard let data = try? Data(contentsOf: url) else { return (InboxMarks(), false) }
        guard let json = try? JSONValue(parsing: data), let members = json.objectMembers else { return (InboxMarks(), true) }
        if let read = json["read"] {
            guard let readMarks = ranges(read) else { return (InboxMarks(), true) }
            guard let deleted = json["deleted"].map(ranges) ?? ReadMarks() else { return (InboxMarks(), true) }
            return (InboxMarks(read: readMarks, deleted: deleted), false)
        }
        guard let old = json["readThrough"] else { return (InboxMarks(), !members.isEmpty) }
        guard let members = old.objectMembers else { return (InboxMarks(), true) }
        var through: [String: Int] = [:]
        for (key, value) in members { if case .number(let n) = value, let i = Int(n) { through[key] = i } }
        let marks = ReadMarks(entries().filter { $0.index <= (through[$0.category ?? ""] ?? 0) }.map { $0.index...$0.index })
        return (InboxMarks(read: marks), false)
    }

    /// `[[first, last], …]` as marks; nil when it is anything else.
    private static func ranges(_ json: JSONValue) -> ReadMarks? {
        guard let pairs = json.arrayValue, pairs.count <= maximumRanges else { return nil }
        var ranges: [ClosedRange<Int>] = []
        for pair in pairs {
            guard let bounds = pair.arrayValue, bounds.count == 2,
                case .number(let first)? = bounds.first, case .number(let last)? = bounds.last,
                let lower = Int(first), let upper = Int(last), lower <= upper,
                markablePositions.contains(lower), markablePositions.contains(upper)
            else { return nil }
            ranges.append(lower...upper)
        }
        return ReadMarks(ranges)
    }

    /// The marks on disk; a damaged marks file is moved aside (`inbox-state.json.corrupt-<time>`),
    /// never written over, and said once in `warning`.
    /// Writes `marks` to `inbox-state.json` and keeps them as this process's; under the lock.
    func saveMarks(_ marks: InboxMarks) {
        func ranges(_ marks: ReadMarks) -> JSONValue {
            .array(marks.ranges.map { .array([.number(String($0.lowerBound)), .number(String($0.upperBound))]) })
        }
        let json = JSONValue.object(dropping: [
            ("read", ranges(marks.read)), ("deleted", marks.deleted.isEmpty ? nil : ranges(marks.deleted)),
        ])
        try? AtomicFile.write(Data(json.text.utf8), to: stateURL, permissions: 0o600)
        state.withLock { $0.marks = marks }
    }

    func loadMarks() -> InboxMarks {
        // The entries only for a file of the earlier form: a copy of the whole log per key
        // that moves a mark would cost what the log holds.
        let (marks, damaged) = Self.readMarks(stateURL) { self.entries }
        guard damaged else { return marks }
        let stamp = W3CDate.format(Date()).prefix(19).filter(\.isNumber)
        let aside = stateURL.deletingLastPathComponent().appendingPathComponent("inbox-state.json.corrupt-\(stamp)")
        let note: String
        do {
            try FileManager.default.moveItem(at: stateURL, to: aside)
            note =
                "\(stateURL.path) could not be read; it was kept as \(aside.lastPathComponent) and every message counts "
                + "as unread"
        } catch {
            note = "\(stateURL.path) could not be read, nor moved aside (\(error.localizedDescription))"
        }
        state.withLock { $0.warning = $0.warning ?? note }
        return marks
    }

    /// Set when the read marks file was damaged: what happened and where it went.
    public var warning: String? { state.withLock { $0.warning } }
}
