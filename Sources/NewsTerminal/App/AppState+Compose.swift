import BreakingNewsKit
import Foundation

extension AppState {
    /// The compose screen: the message field, the category boxes, the last send's results.
    public struct Compose: Sendable, Hashable {
        /// The message; line feeds are its lines.
        public var text: [Character] = []
        public var cursor = 0
        /// The first row of the field shown (the field scrolls to keep the cursor in sight).
        public var fieldTop = 0
        /// The column ↑ and ↓ keep while they move from row to row (nil: the cursor's).
        public var goalColumn: Int?
        public var focus: ComposeFocus = .text
        public var checked: [Bool]
        public var results: [SendResultRow] = []
        public var sending = false
        /// The text of the send under way: what a successful send takes out of the field,
        /// leaving anything typed meanwhile.
        public var inFlight: [Character] = []
        /// The send under way, as the history keeps it once it is sent.
        public var inFlightSend: SentMessage?
        public var error: String?
        /// The home's last sends, oldest first (`SentHistory.limit` of them).
        public var sent: [SentMessage] = []
        /// The send ↑ or Ctrl-P recalled into the field, counted from the newest (0); nil while
        /// the field holds the user's own draft.
        public var recalled: Int?
        /// The draft the first recall took out of the field, which Ctrl-N past the newest
        /// brings back.
        public var stashed: [Character] = []
        /// Ctrl-X was pressed: the next key completes it (Ctrl-E: the editor).
        public var controlX = false

        /// The compose screen as a window opens it: the draft in the field, the cursor at its
        /// end, and the boxes the home's last send checked (none before a first send: a send
        /// goes where the user chose).
        init(categories: [BreakingNewsKit.Category], draft: String, sent: [SentMessage]) {
            let last = Set((sent.last?.categories ?? []).map { $0.lowercased() })
            checked = categories.map { last.contains($0.name.lowercased()) }
            text = Array(draft)
            cursor = text.count
            self.sent = Array(sent.suffix(SentHistory.limit))
        }
    }
}
