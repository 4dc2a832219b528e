import Foundation
import NotificationHubs

/// Scheduled sends: accepted durably like any send (state `Scheduled`), fired through the
/// writer when due (state `Enqueued`, then dispatched as any send), or cancelled through
/// the writer before. A hub that was down fires what fell due meanwhile as soon as it
/// starts; the writer takes each out of the book once, so each fires or is cancelled once.
extension HubEngine {
    /// The longest the scheduler sleeps while something is scheduled: the most a send fires
    /// after its time, besides the writer's commit and the dispatch.
    static let scheduleTick = 0.2

    /// The furthest ahead a send may be scheduled, as on the service.
    public static let longestSchedule: TimeInterval = 7 * 24 * 3600

    func runScheduler() async {
        // On a shared store, due sends are claimed by one node (`ClusterFollower.runClaims`).
        guard !isClustered else { return }
        while !Task.isCancelled {
            let (due, next) = schedule.withLock { $0.due(at: Date()) }
            for notification in due {
                do {
                    _ = try await write(.fireScheduled(hub: notification.hub, id: notification.id))
                } catch is WriteRefusal {
                    // Cancelled meanwhile.
                } catch {
                    // Not fired (the commit failed or the engine stops): still scheduled in
                    // the store, so back in the book to try again.
                    if error is EngineStopped { return }
                    schedule.withLock { $0.add(notification) }
                    logger.error("firing the scheduled notification \(notification.id) failed, retrying: \(error)")
                }
            }
            let wait = next.map { min(max($0.timeIntervalSinceNow, 0.005), Self.scheduleTick) } ?? Self.scheduleTick * 5
            try? await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000))
        }
    }

    /// Accepts a notification to send at `scheduledFor` (durably); it is then in the book.
    public func schedule(_ notification: StoredNotification) async throws {
        var scheduled = notification
        scheduled.state = .scheduled
        if let follower {
            let waiting = try await follower.store.scheduledCount(hub: notification.hub)
            guard waiting < Self.maximumScheduled else {
                throw WriteRefusal(
                    reason: .quotaExceeded,
                    detail:
                        "the hub holds \(waiting) scheduled sends, the most it may; cancel some or wait for them to go")
            }
        }
        _ = try await write(.enqueue(scheduled))
        metrics.send(format: notification.format.rawValue)
    }

    /// Cancels a scheduled notification that has not fired; a `WriteRefusal` (not found)
    /// when it fired, was cancelled, or never was.
    public func cancelScheduled(hub: String, id: String) async throws {
        if let follower {
            guard try await follower.store.cancelScheduled(hub: hub, id: id, at: Date()) else {
                throw WriteRefusal(
                    reason: .notFound,
                    detail: "No scheduled notification '\(id)' is waiting: it was sent, cancelled, or never scheduled")
            }
            return
        }
        _ = try await write(.cancelScheduled(hub: hub, id: id))
    }

    /// Scheduled notifications waiting, for `/metrics`.
    public var scheduledCount: Int { schedule.withLock { $0.count } }
}
