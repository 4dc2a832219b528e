import Foundation
import NotificationHubs

/// The notifications the batch accepts, fires and cancels.
extension WriteBatch {
    mutating func enqueue(_ notification: StoredNotification) -> WriteResolution {
        if notification.state == .scheduled {
            let key = notification.hub.lowercased()
            let held = coordination.scheduledHeld(hub: notification.hub)
            let waiting = held.count + (scheduledDelta[key] ?? 0)
            guard waiting < HubWriter.maximumScheduled else {
                return .quotaExceeded(
                    "the hub holds \(waiting) scheduled sends, the most it may; cancel some or wait for them to go")
            }
            let size = ScheduleBook.size(notification)
            let bytes = held.bytes + (scheduledBytesDelta[key] ?? 0)
            guard bytes + size <= HubWriter.maximumScheduledBytes else {
                return .quotaExceeded(
                    "the hub's scheduled sends hold \(HubEngine.describeBytes(bytes)) waiting, and this one would pass the "
                        + "\(HubEngine.describeBytes(HubWriter.maximumScheduledBytes)) they may; cancel some or wait for "
                        + "them to go")
            }
            scheduledDelta[key, default: 0] += 1
            scheduledBytesDelta[key, default: 0] += size
        }
        mutations.append(.insertNotification(notification))
        enqueued.append(notification)
        return .done
    }

    mutating func fireScheduled(_ hub: String, _ id: String) -> WriteResolution {
        guard var notification = unschedule(hub, id) else {
            return .notFound("The scheduled notification '\(id)' is not waiting")
        }
        notification.state = .enqueued
        mutations.append(.fireScheduled(hub: hub, id: id))
        enqueued.append(notification)
        return .done
    }

    mutating func cancelScheduled(_ hub: String, _ id: String) -> WriteResolution {
        guard unschedule(hub, id) != nil else {
            return .notFound("No scheduled notification '\(id)' is waiting: it was sent, cancelled, or never scheduled")
        }
        mutations.append(.cancelScheduled(hub: hub, id: id, at: now))
        return .done
    }

    /// Takes a waiting scheduled send out of the book (it fires or is cancelled), noting it
    /// in case the commit fails; nil when it is not waiting.
    mutating func unschedule(_ hub: String, _ id: String) -> StoredNotification? {
        guard let notification = coordination.takeScheduled(hub: hub, id: id) else { return nil }
        unscheduled.append(notification)
        return notification
    }
}
