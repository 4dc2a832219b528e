import Foundation
import LocalHubSupport

/// One send of a compose screen: what was sent, and where.
public struct SentMessage: Codable, Sendable, Hashable {
    public var text: String
    public var categories: [String]
    public var sentAt: Date

    public init(text: String, categories: [String], sentAt: Date) {
        self.text = text
        self.categories = categories
        self.sentAt = sentAt
    }
}

/// The last `limit` sends of the home's compose screens (`sent.json`), oldest first, that ↑
/// recalls and whose last one's categories a window opens checked. Written whole, atomically,
/// owner only, under `sent.json.lock`, so windows sending at once each add theirs; a file that
/// cannot be read is moved aside (`sent.json.corrupt-<time>`), never overwritten.
public struct SentHistory: Sendable {
    public static let limit = 100
    /// A file larger than any 100 sends can make is not read.
    static let largestFile = 1_048_576

    public let url: URL

    public init(url: URL) { self.url = url }

    var lockURL: URL { url.appendingPathExtension("lock") }

    /// The sends kept, oldest first; none when there is no file or it cannot be read.
    public func load() -> [SentMessage] { read().sends }

    /// Adds `message` as the newest, forgetting the oldest past `limit`.
    public func append(_ message: SentMessage, now: Date = Date()) throws {
        try FileLock.withExclusive(lockURL) { () throws in
            let (kept, corrupt) = read()
            if corrupt {
                let aside = url.deletingLastPathComponent().appendingPathComponent(
                    url.lastPathComponent + ".corrupt-\(Int(now.timeIntervalSince1970))")
                try FileManager.default.moveItem(at: url, to: aside)
            }
            let sends = Array((kept + [Self.bounded(message)]).suffix(Self.limit))
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            try AtomicFile.write(try encoder.encode(sends), to: url, permissions: 0o600)
        }
    }

    /// What the file holds, and whether it is there but unreadable.
    private func read() -> (sends: [SentMessage], corrupt: Bool) {
        guard FileManager.default.fileExists(atPath: url.path) else { return ([], false) }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let data = try? Data(contentsOf: url), data.count <= Self.largestFile,
            let sends = try? decoder.decode([SentMessage].self, from: data)
        else { return ([], true) }
        return (Array(sends.suffix(Self.limit).map(Self.bounded)), false)
    }

    /// A send as it is kept: its text at most what a send may carry (a file edited by hand
    /// may hold more).
    static func bounded(_ message: SentMessage) -> SentMessage {
        var message = message
        if message.text.utf8.count > Publisher.maximumTextBytes {
            message.text = String(decoding: message.text.utf8.prefix(Publisher.maximumTextBytes), as: UTF8.self)
        }
        message.categories = Array(message.categories.prefix(64))
        return message
    }
}
