import Synchronization

/// How far a node has followed the shared store's two numbered logs.
extension SharedDatabase {
    /// How far this node has followed the delivery feed. Its two ways on are atomic, so a page
    /// read while this node committed is never applied over what the commit applied.
    final class Cursor: Sendable {
        private let value = Mutex<Int64>(0)
        var position: Int64 {
            get { value.withLock { $0 } }
            set { value.withLock { $0 = newValue } }
        }

        /// Moves on through `through`, applying the entries of a page read from the log that
        /// lie past the position (this node's commits may have moved it since the read).
        func advance<Entry>(_ page: [Entry], through: Int64, number: (Entry) -> Int64, apply: ([Entry]) -> Void) {
            value.withLock { position in
                guard through > position else { return }
                let fresh = page.drop { number($0) <= position }
                if !fresh.isEmpty { apply(Array(fresh)) }
                position = through
            }
        }

        /// Moves on over `numbers`, taken by this node's own commit, applying it with `apply`,
        /// when they come next. False, applying nothing, when numbers before them are unread
        /// (another node committed between) or they were read already.
        func take(_ numbers: ClosedRange<Int64>, apply: () -> Void) -> Bool {
            value.withLock { position in
                guard position == numbers.lowerBound - 1 else { return false }
                apply()
                position = numbers.upperBound
                return true
            }
        }
    }

    /// How far this node has read the change log, and the records of its own commits applied
    /// ahead of that point, each with the last number of the commit that applied it. A change
    /// read at that number or before is left out: the tables hold the record as that commit
    /// left it or newer (a later change of it is numbered after, and is applied). Noted
    /// records are dropped once the log is read past their number; a reload drops them all.
    final class ChangeCursor: Sendable {
        private struct Place {
            var position: Int64 = 0
            var applied: [ChangedRecord: Int64] = [:]
        }
        private let place = Mutex(Place())

        /// Where the log was read through. Setting it (a start, a reload) drops every record noted.
        var position: Int64 {
            get { place.withLock { $0.position } }
            set { place.withLock { $0 = Place(position: newValue) } }
        }

        /// The records applied ahead of the position, and at which number.
        var applied: [ChangedRecord: Int64] { place.withLock { $0.applied } }

        /// Applies a page read from the log through `through`: its changes past the position,
        /// but none of a record applied at its number or later.
        func advance(_ page: [StoredChange], through: Int64, apply: ([StoredChange]) -> Void) {
            place.withLock { place in
                guard through > place.position else { return }
                let position = place.position
                let applied = place.applied
                let fresh = page.filter { change in
                    guard change.seq > position else { return false }
                    if case .applied = change.row { return false }
                    guard let at = applied[change.record] else { return true }
                    return change.seq > at
                }
                if !fresh.isEmpty { apply(fresh) }
                place.position = through
                if !place.applied.isEmpty { place.applied = place.applied.filter { $0.value > through } }
            }
        }

        /// This node's commit of `numbers`, changing `records`, applied with `apply`. When the
        /// numbers come next the position moves over them; when the log was read past them
        /// already, the tables hold them (or newer) and nothing is applied; else they are
        /// applied ahead of the position and the records noted. True when nothing before them
        /// is left to read.
        func take(_ numbers: ClosedRange<Int64>, records: [ChangedRecord], apply: () -> Void) -> Bool {
            place.withLock { place in
                if place.position == numbers.lowerBound - 1 {
                    apply()
                    place.position = numbers.upperBound
                    return true
                }
                if place.position >= numbers.upperBound { return true }
                apply()
                for record in records { place.applied[record] = max(place.applied[record] ?? 0, numbers.upperBound) }
                return false
            }
        }
    }
}
