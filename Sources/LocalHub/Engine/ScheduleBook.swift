import Foundation
import NotificationHubs

/// The scheduled notifications not yet fired or cancelled, in memory; the store holds them
/// too (state `Scheduled`), and the engine reloads them at start.
struct ScheduleBook: Sendable {
    private var waiting: [String: StoredNotification] = [:]
    /// How many wait, and the bytes they hold, by lower-cased hub.
    private var perHub: [String: Int] = [:]
    private var bytesPerHub: [String: Int] = [:]

    private static func key(_ hub: String, _ id: String) -> String { hub.lowercased() + "\u{0}" + id }

    var count: Int { waiting.count }

    func count(hub: String) -> Int { perHub[hub.lowercased()] ?? 0 }

    /// The bytes one hub's waiting sends hold in memory.
    func bytes(hub: String) -> Int { bytesPerHub[hub.lowercased()] ?? 0 }

    /// About what a notification holds in memory while it waits.
    static func size(_ notification: StoredNotification) -> Int {
        notification.body.utf8.count + (notification.tagExpression?.utf8.count ?? 0)
            + notification.headers.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            + (notification.batchHandles ?? []).reduce(0) { $0 + $1.utf8.count } + 256
    }

    mutating func add(_ notification: StoredNotification) {
        let key = notification.hub.lowercased()
        if let old = waiting.updateValue(notification, forKey: Self.key(notification.hub, notification.id)) {
            bytesPerHub[key, default: 0] -= Self.size(old)
        } else {
            perHub[key, default: 0] += 1
        }
        bytesPerHub[key, default: 0] += Self.size(notification)
    }

    /// Takes a notification out (it fires, or is cancelled); nil when it is not waiting.
    mutating func remove(hub: String, id: String) -> StoredNotification? {
        guard let removed = waiting.removeValue(forKey: Self.key(hub, id)) else { return nil }
        perHub[hub.lowercased(), default: 1] -= 1
        bytesPerHub[hub.lowercased(), default: 0] -= Self.size(removed)
        return removed
    }

    /// Those due at `now`, earliest first, and when the next one after them is due.
    func due(at now: Date) -> (due: [StoredNotification], next: Date?) {
        var due: [StoredNotification] = []
        var next: Date?
        for notification in waiting.values {
            let at = notification.scheduledFor ?? now
            if at <= now {
                due.append(notification)
            } else if next.map({ at < $0 }) ?? true {
                next = at
            }
        }
        return (due.sorted { ($0.scheduledFor ?? now) < ($1.scheduledFor ?? now) }, next)
    }
}
