import Foundation
import LocalHubSupport
import NotificationHubs

/// Keeping the received log to what the user chooses (`keepReceivedDays`): a message read (or
/// deleted) and received longer ago than that is pruned; an unread one is always kept.
///
/// Positions survive a prune: a pruned message keeps its line, cut to a stub (its id,
/// template, number and epoch, some 150 bytes instead of its payload), and its position is
/// added to the deleted ones, so the read marks, the deleted marks and the alerted position
/// (all log positions) mean what they meant, the stream never brings it back (its dedupe key
/// is kept) and the resume point stays. The file is replaced at once (atomic rename) under
/// the log's lock; every reader sees a new file (its inode) and reads it again from the
/// start, finding the same positions, so a window following the log goes on with what comes
/// after them.
extension InboxLog {
    /// Prunes what was received before `days` days before `now` and is read or deleted;
    /// returns how many messages were pruned (0 for `days` nil or under 1).
    @discardableResult
    public func prune(keepingDays days: Int?, now: Date = Date()) throws -> Int {
        guard let days, days > 0 else { return 0 }
        let horizon = now.addingTimeInterval(-Double(days) * 86_400)
        return try withFileLock { () throws -> Int in
            _ = readNewLines()
            var marks = loadMarks()
            let entries = state.withLock { $0.entries }
            let pruned = Self.prunable(entries, marks: marks, before: horizon)
            guard !pruned.isEmpty else { return 0 }
            // Deleted first: a reader between the two writes shows none of them.
            marks.deleted.formUnion(pruned)
            saveMarks(marks)
            var text = ""
            var kept: [InboxEntry] = []
            for var entry in entries {
                if pruned.contains(entry.index) {
                    entry.pruned = true
                    (entry.text, entry.payload, entry.category, entry.gap, entry.hub) = ("", .null, nil, nil, "")
                    text += entry.stub.text + "\n"
                } else {
                    text += entry.json.text + "\n"
                }
                kept.append(entry)
            }
            let data = Data(text.utf8)
            try AtomicFile.write(data, to: url, permissions: 0o600)
            var info = stat()
            let inode = stat(url.path, &info) == 0 ? UInt64(info.st_ino) : 0
            state.withLock { state in
                (state.entries, state.offset, state.inode) = (kept, UInt64(data.count), inode)
            }
            return pruned.count
        }
    }

    /// How many messages a prune keeping `days` days would remove at `now`, removing none: a
    /// setting's confirmation says it before any prune does.
    public func prunableCount(keepingDays days: Int?, now: Date = Date()) -> Int {
        guard let days, days > 0 else { return 0 }
        catchUp()
        return Self.prunable(entries, marks: reloadMarks(), before: now.addingTimeInterval(-Double(days) * 86_400)).count
    }

    /// The positions of the messages received before `horizon` and read or deleted.
    static func prunable(_ entries: [InboxEntry], marks: InboxMarks, before horizon: Date) -> ReadMarks {
        var pruned = ReadMarks()
        for entry in entries where !entry.pruned {
            guard let at = W3CDate.parse(entry.receivedAt), at < horizon else { continue }
            guard marks.read.contains(entry.index) || marks.deleted.contains(entry.index) else { continue }
            pruned.formUnion(ReadMarks([entry.index...entry.index]))
        }
        return pruned
    }
}
