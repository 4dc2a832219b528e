import Foundation
import LocalHubSupport
import NotificationHubs
import Synchronization

/// One message this terminal received.
public struct InboxEntry: Sendable, Hashable {
    /// Position in the log, from 1.
    public var index: Int
    public var notificationId: String
    public var template: String?
    /// The hub's delivery sequence number: where a stream resumes.
    public var seq: Int64
    /// The hub it came from (its URL).
    public var hub: String
    /// The hub's name.
    public var hubName: String
    /// The epoch of the hub's delivery log `seq` counts in.
    public var epoch: String?
    /// When this terminal wrote it to the log (W3C).
    public var receivedAt: String
    /// When it was sent (W3C): when the hub wrote its delivery (`deliveredAt`; a scheduled
    /// send's fire time), what the Log shows and orders by (`sentTime`).
    public var sentAt: String { didSet { sentSeconds = Self.seconds(sentAt) } }
    /// `sentAt` as seconds since 1970 (0 when it is no time): what the Log orders by.
    public private(set) var sentSeconds: Double
    public var category: String?
    public var text: String
    public var payload: JSONValue
    /// Set on the entry that says messages expired on the hub before this terminal read them
    /// (its retention removed them): not a message, a notice in its place in the log.
    public var gap: BuiltInPushGap?
    /// Whether the message was pruned (`InboxLog.prune`): only what keeps its position, its
    /// dedupe key and the resume point is left of it, and it is shown nowhere.
    public var pruned = false

    /// The key of the delivery this entry records (`BuiltInPushDelivery.dedupeKey`).
    public var dedupeKey: String { BuiltInPushDelivery.dedupeKey(notificationId: notificationId, template: template) }

    var json: JSONValue {
        .object(dropping: [
            ("id", .string(notificationId)), ("template", template.map(JSONValue.string)), ("seq", .number(String(seq))),
            ("hub", .string(hub)), ("hubName", .string(hubName)), ("epoch", epoch.map(JSONValue.string)),
            ("sentAt", .string(sentAt)), ("receivedAt", .string(receivedAt)),
            ("category", category.map(JSONValue.string)), ("text", .string(text)), ("payload", payload), ("gap", gap?.json),
        ])
    }

    /// What is left of a pruned message: a line of some 150 bytes instead of its payload.
    var stub: JSONValue {
        .object(dropping: [
            ("id", .string(notificationId)), ("template", template.map(JSONValue.string)), ("seq", .number(String(seq))),
            ("hubName", .string(hubName)), ("epoch", epoch.map(JSONValue.string)), ("sentAt", .string(sentAt)),
            ("receivedAt", .string(receivedAt)), ("pruned", .bool(true)),
        ])
    }

    /// What the log says of a gap: how many messages expired, when the hub knows.
    public static func gapText(expired: Int?) -> String {
        switch expired {
        case 1?: "1 message expired on the hub while this terminal was away"
        case let count?: "\(count) messages expired on the hub while this terminal was away"
        case nil: "Messages expired on the hub while this terminal was away"
        }
    }

    init?(json: JSONValue, index: Int) {
        guard let id = json["id"]?.stringValue, case .number(let seqText)? = json["seq"], let seq = Int64(seqText) else {
            return nil
        }
        self.index = index
        self.notificationId = id
        self.template = json["template"]?.stringValue
        self.seq = seq
        self.hub = json["hub"]?.stringValue ?? ""
        self.hubName = json["hubName"]?.stringValue ?? ""
        self.epoch = json["epoch"]?.stringValue
        self.receivedAt = json["receivedAt"]?.stringValue ?? ""
        // Lines written before the send time was kept: the time in the notification id.
        self.sentAt = Self.sentTime(json["sentAt"]?.stringValue, id: id, receivedAt: receivedAt)
        self.sentSeconds = Self.seconds(sentAt)
        self.category = json["category"]?.stringValue
        self.text = json["text"]?.stringValue ?? ""
        self.payload = json["payload"] ?? .null
        self.gap = json["gap"].flatMap { try? BuiltInPushGap(json: $0) }
        self.pruned = json["pruned"] == .bool(true)
    }

    init(delivery: BuiltInPushDelivery, hub: String, category: String?, receivedAt: String, index: Int) {
        self.index = index
        self.notificationId = delivery.notificationId
        self.template = delivery.template
        self.seq = delivery.seq
        self.hub = hub
        self.hubName = delivery.hub
        self.epoch = delivery.epoch
        self.receivedAt = receivedAt
        self.sentAt = Self.sentTime(delivery.deliveredAt, id: delivery.notificationId, receivedAt: receivedAt)
        self.sentSeconds = Self.seconds(sentAt)
        self.category = category
        self.text = delivery.alertText ?? delivery.payload.text
        self.payload = delivery.payload
    }

    init(gap: BuiltInPushGap, hub: String, hubName: String, epoch: String?, receivedAt: String, index: Int) {
        self.index = index
        self.notificationId = "gap:\(epoch ?? "-"):\(gap.through)"
        self.template = nil
        self.seq = gap.through
        self.hub = hub
        self.hubName = hubName
        self.epoch = epoch
        self.receivedAt = receivedAt
        self.sentAt = receivedAt
        self.sentSeconds = Self.seconds(receivedAt)
        self.category = nil
        self.text = Self.gapText(expired: gap.expired)
        self.payload = .null
        self.gap = gap
    }

    /// Whether it was received more than a minute after it was sent (the terminal was away,
    /// or the send was scheduled): the Log then says when it came as well.
    public var receivedLate: Bool {
        guard sentSeconds > 0, let received = W3CDate.parse(receivedAt) else { return false }
        return received.timeIntervalSince1970 - sentSeconds > 60
    }

    static func seconds(_ w3c: String) -> Double { W3CDate.parse(w3c)?.timeIntervalSince1970 ?? 0 }

    /// The send time of a message that says `stated` (the hub's `deliveredAt`, or the log
    /// line's `sentAt`), with notification id `id`, received at `receivedAt`: `stated` when it
    /// is a W3C time, else the time in an id of the hub's shape (`<hex>-<yyyyMMddHHmmss>-<n>`,
    /// UTC), else the received time. Never later than the received time: a hub whose clock is
    /// ahead (or that says so on purpose) cannot put a message above every later one.
    static func sentTime(_ stated: String?, id: String, receivedAt: String) -> String {
        let received = W3CDate.parse(receivedAt)
        let sent = stated.flatMap(W3CDate.parse) ?? idTime(id)
        guard let sent else { return receivedAt }
        if let received, sent > received { return receivedAt }
        return W3CDate.format(sent)
    }

    /// The UTC time stamp of a notification id of the hub's shape, when it has one.
    static func idTime(_ id: String) -> Date? {
        let parts = id.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1].utf8.count == 14, parts[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        let d = Array(parts[1])
        func digits(_ range: Range<Int>) -> String { String(d[range]) }
        let text = "\(digits(0..<4))-\(digits(4..<6))-\(digits(6..<8))T\(digits(8..<10)):\(digits(10..<12)):\(digits(12..<14))Z"
        return W3CDate.parse(text)
    }

    /// An entry made directly, for tests and previews.
    public init(testing delivery: BuiltInPushDelivery, category: String?, index: Int, receivedAt: String) {
        self.init(
            delivery: delivery, hub: "http://localhost/\(delivery.hub)", category: category, receivedAt: receivedAt, index: index)
    }

    /// A notice of expired messages made directly, for tests and previews.
    public init(testing gap: BuiltInPushGap, hubName: String, index: Int, receivedAt: String) {
        self.init(
            gap: gap, hub: "http://localhost/\(hubName)", hubName: hubName, epoch: "e", receivedAt: receivedAt, index: index)
    }

    /// A JSON line for `log --json`.
    public var jsonLine: String { json.text }
}

/// The received-message log, `inbox.jsonl` (one JSON object per line), and the read and
/// deleted marks beside it (`InboxLog+Marks`). Appends are deduplicated by notification id and template, also across processes
/// sharing the file (an exclusive lock around each append), and flushed to disk.
public final class InboxLog: Sendable {
    public let url: URL
    let stateURL: URL
    private let lockURL: URL

    struct State {
        var entries: [InboxEntry] = []
        var keys: Set<String> = []
        /// Bytes of the file already read.
        var offset: UInt64 = 0
        /// The positions read and deleted, as this process last saw them on disk.
        var marks = InboxMarks()
        var warning: String?
        var skippedLines = 0
        /// The file's size when a follower last looked.
        var lastSeenSize: UInt64 = 0
        /// The file read (its inode): a prune replaces it, and a reader then reads it anew.
        var inode: UInt64 = 0
    }

    let state = Mutex(State())

    public init(url: URL) {
        self.url = url
        self.stateURL = url.deletingLastPathComponent().appendingPathComponent("inbox-state.json")
        self.lockURL = url.deletingLastPathComponent().appendingPathComponent("inbox.lock")
        catchUp()
        let marks = withFileLock { loadMarks() }
        state.withLock { $0.marks = marks }
    }

    /// Everything received, oldest first, the deleted messages included (positions count
    /// them); `shownEntries` leaves them out.
    public var entries: [InboxEntry] { state.withLock { $0.entries } }

    /// What is received and not deleted, oldest first.
    public var shownEntries: [InboxEntry] {
        state.withLock { state in state.entries.filter { !state.marks.deleted.contains($0.index) } }
    }

    /// Lines that could not be read (for example a write cut short by a crash).
    public var skippedLines: Int { state.withLock { $0.skippedLines } }

    /// Where to resume receiving from the hub named `hubName`: the epoch of its newest
    /// delivery here and the highest sequence number seen in that epoch.
    public func resumePoint(hubName: String) -> (epoch: String?, seq: Int64)? {
        state.withLock { state in
            guard let newest = state.entries.last(where: { $0.hubName == hubName }) else { return nil }
            let seq =
                state.entries.lazy.filter { $0.hubName == hubName && $0.epoch == newest.epoch }.map(\.seq).max() ?? newest.seq
            return (newest.epoch, seq)
        }
    }

    /// Reads what other processes appended since the last read.
    public func catchUp() {
        withFileLock { _ = readNewLines() }
    }

    /// `catchUp`, only when the file holds more than was read: a look at its size, no lock,
    /// when nothing was appended (followers ask several times a second).
    public func catchUpIfGrown() {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return }
        let size = UInt64(info.st_size)
        // Read only when the size moved since the last look: a last line still being written
        // (or never finished) does not cost a locked read four times a second.
        let changed = state.withLock { state in
            defer { state.lastSeenSize = size }
            return size != state.lastSeenSize && size != state.offset
        }
        if changed { catchUp() }
    }

    /// The entries after the first `count`, oldest first.
    public func entries(after count: Int) -> [InboxEntry] {
        state.withLock { Array($0.entries.dropFirst(max(0, count))) }
    }

    /// Adds deliveries not seen before; returns the new entries.
    @discardableResult
    public func append(
        _ deliveries: [BuiltInPushDelivery], hub: String, categoryOf: (BuiltInPushDelivery) -> String?, now: Date = Date()
    )
        throws
        -> [InboxEntry]
    {
        guard !deliveries.isEmpty else { return [] }
        return try appendEntries { index in
            deliveries.map { delivery in
                InboxEntry(
                    delivery: delivery, hub: hub, category: categoryOf(delivery), receivedAt: W3CDate.format(now), index: index)
            }
        }
    }

    /// Adds the notice that messages expired on the hub before this terminal read them, in
    /// its place (numbered as the last one removed, so the resume point moves past it); nil
    /// when the log has it already.
    @discardableResult
    public func appendGap(_ gap: BuiltInPushGap, hub: String, hubName: String, epoch: String?, now: Date = Date()) throws
        -> InboxEntry?
    {
        try appendEntries { index in
            [InboxEntry(gap: gap, hub: hub, hubName: hubName, epoch: epoch, receivedAt: W3CDate.format(now), index: index)]
        }.first
    }

    /// Appends the entries `make` gives (each made with the position it would take) that the
    /// log does not have, under the log's lock; returns those added.
    private func appendEntries(_ make: (Int) -> [InboxEntry]) throws -> [InboxEntry] {
        try withFileLock { () throws -> [InboxEntry] in
            let endsWithNewline = readNewLines()
            var added: [InboxEntry] = []
            var text = endsWithNewline ? "" : "\n"
            state.withLock { state in
                for var entry in make(state.entries.count + 1) where state.keys.insert(entry.dedupeKey).inserted {
                    entry.index = state.entries.count + 1
                    state.entries.append(entry)
                    added.append(entry)
                    text += entry.json.text + "\n"
                }
            }
            guard !added.isEmpty else { return [] }
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            if !FileManager.default.fileExists(atPath: url.path) {
                FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600])
            }
            let handle = try FileHandle(forWritingTo: url)
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(text.utf8))
            try handle.synchronize()
            let end = try handle.offset()
            state.withLock { $0.offset = end }
            return added
        }
    }

    /// Claims the arrival alert for the messages up to log position `index`: true when no
    /// window of the home has alerted that far, which it now has; false when one has. The
    /// position lives in `inbox-alerted.json` beside the log, changed under the log's lock, so
    /// however many windows show a message one alert tells of it. A damaged file reads as 0.
    public func claimAlert(through index: Int) -> Bool {
        let alertedURL = url.deletingLastPathComponent().appendingPathComponent("inbox-alerted.json")
        return withFileLock {
            // Positions count in one log: the file names the log's first message, so a log
            // begun anew (removed, moved aside) does not stay silent up to the old position.
            let log = state.withLock { $0.entries.first?.notificationId }
            var alerted = 0
            if let data = try? Data(contentsOf: alertedURL), let json = try? JSONValue(parsing: data),
                case .number(let text)? = json["through"], let through = Int(text), json["log"]?.stringValue == log
            {
                alerted = through
            }
            guard index > alerted else { return false }
            let json = JSONValue.object(dropping: [("through", .number(String(index))), ("log", log.map(JSONValue.string))])
            try? AtomicFile.write(Data(json.text.utf8), to: alertedURL, permissions: 0o600)
            return true
        }
    }

    /// Reads lines appended after `offset`; a last line without its newline is left for later.
    /// Returns whether the file ends with a newline (or is empty).
    func readNewLines() -> Bool {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return true }
        defer { try? handle.close() }
        var info = stat()
        let inode = fstat(handle.fileDescriptor, &info) == 0 ? UInt64(info.st_ino) : 0
        let start = state.withLock { state -> UInt64 in
            if state.inode != inode {
                // A new file (a prune rewrote it): read from its start. Positions are the
                // same (a pruned message keeps its line), so what was read is read again.
                if state.inode != 0 { (state.entries, state.keys, state.offset) = ([], [], 0) }
                state.inode = inode
            }
            return state.offset
        }
        guard (try? handle.seek(toOffset: start)) != nil, let data = try? handle.readToEnd(), !data.isEmpty else {
            return start == 0 || Self.lastByteIsNewline(handle)
        }
        let bytes = [UInt8](data)
        guard let lastNewline = bytes.lastIndex(of: 0x0A) else { return false }
        let complete = bytes[...lastNewline]
        state.withLock { state in
            for line in complete.split(separator: 0x0A, omittingEmptySubsequences: true) {
                guard let json = try? JSONValue(parsing: line),
                    let entry = InboxEntry(json: json, index: state.entries.count + 1)
                else {
                    state.skippedLines += 1
                    continue
                }
                guard state.keys.insert(entry.dedupeKey).inserted else { continue }
                state.entries.append(entry)
            }
            state.offset = start + UInt64(complete.count)
        }
        return lastNewline == bytes.count - 1
    }

    private static func lastByteIsNewline(_ handle: FileHandle) -> Bool {
        guard let end = try? handle.seekToEnd(), end > 0 else { return true }
        try? handle.seek(toOffset: end - 1)
        return (try? handle.read(upToCount: 1))?.first == 0x0A
    }

    func withFileLock<T>(_ body: () throws -> T) rethrows -> T {
        try FileLock.withExclusive(lockURL, body)
    }
}
