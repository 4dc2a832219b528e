import BreakingNewsKit

/// `z`: this window's deletes and `A`s undone one by one, newest first, for as long as the
/// window is open. Each undo changes back only what its action changed and what is still so:
/// marks another window moved meanwhile stay as that window left them.
extension AppState {
    /// Puts an action on the undo stack; past `undoLimit`, the oldest goes.
    mutating func remember(_ action: Undo) {
        undos.append(action)
        if undos.count > Self.undoLimit { undos.removeFirst(undos.count - Self.undoLimit) }
    }

    /// `z`: undoes the newest action that still has something to undo, in every window of
    /// the home. An action another window has undone already (the message restored there,
    /// the messages marked unread) is passed over.
    mutating func undoLast() -> [Effect] {
        while let action = undos.popLast() {
            let left = stillUndoable(action)
            guard !left.isEmpty else { continue }
            let more = undos.reduce(0) { $0 + (hasSomethingToUndo($1) ? 1 : 0) }
            let after = more == 0 ? "" : " · \(more) more to undo"
            switch action {
            case .markedRead:
                note("Undone: \(left.count) unread again\(after)")
                return changeMarks(.unread(left))
            case .deleted(_, let headline):
                note("Undone: “\(headline)” is back\(after)")
                let effects = changeMarks(.restore(left))
                recountMatches()
                return effects
            }
        }
        note("Nothing to undo")
        return []
    }

    /// Whether undoing `action` would change anything now (`stillUndoable` not empty, without
    /// building it: the toast counts the actions left at every press).
    private func hasSomethingToUndo(_ action: Undo) -> Bool {
        switch action {
        case .markedRead(let positions): return positions.ranges.contains(where: marks.read.overlaps)
        case .deleted(let positions, _):
            return positions.ranges.contains { $0.contains { deletedItems[$0] != nil && marks.deleted.contains($0) } }
        }
    }

    /// What undoing `action` would change now: of the messages it marked read, those still
    /// read; of those it deleted, those still deleted and not pruned.
    func stillUndoable(_ action: Undo) -> ReadMarks {
        switch action {
        case .markedRead(let positions): return positions.common(with: marks.read)
        case .deleted(let positions, _):
            let kept = positions.common(with: marks.deleted)
            let pruned = kept.ranges.flatMap { $0 }.filter { deletedItems[$0] == nil }
            guard !pruned.isEmpty else { return kept }
            var left = kept
            left.subtract(ReadMarks(pruned.map { $0...$0 }))
            return left
        }
    }
}

extension ReadMarks {
    /// Whether any position of `range` is marked (a binary search, nothing built).
    func overlaps(_ range: ClosedRange<Int>) -> Bool {
        var (low, high) = (0, ranges.count)
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].upperBound < range.lowerBound { low = middle + 1 } else { high = middle }
        }
        return low < ranges.count && ranges[low].lowerBound <= range.upperBound
    }

    /// The positions marked both here and in `other`.
    func common(with other: ReadMarks) -> ReadMarks {
        var outside = self
        outside.subtract(other)
        var inside = self
        inside.subtract(outside)
        return inside
    }
}
