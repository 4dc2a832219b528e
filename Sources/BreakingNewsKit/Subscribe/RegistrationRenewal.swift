import Foundation
import NotificationHubs

/// When this terminal registers again so that its installation never expires while it is
/// used: each registration names an expiry `lifetime` ahead; every launch registers, and a
/// window that stays open checks every `checkInterval` and registers again once its last
/// registration is `renewalAge` old, long before it would expire.
public enum RegistrationRenewal {
    /// The expiry each registration names: 90 days, as the iOS SDK does.
    public static let lifetime: TimeInterval = 90 * 86_400
    /// How old a registration is when an open window renews it: a day, so a window open for
    /// months keeps its installation at least 89 days from expiring and writes it once a day.
    public static let renewalAge: TimeInterval = 86_400
    /// How often an open window checks.
    public static let checkInterval: Duration = .seconds(3600)

    /// Whether `record` (the last registration, nil after `unregister`) is due to be renewed
    /// at `now`: one that succeeded a day ago or more, or one still pending (the hub was away
    /// at the last try). A failed one waits for the user (the hub refused it), and one the
    /// user removed (`unregister`) stays removed.
    public static func isDue(_ record: RegistrationRecord?, now: Date) -> Bool {
        guard let record, record.state != .failed else { return false }
        if record.state == .pending { return true }
        guard let at = W3CDate.parse(record.at) else { return true }
        return now.timeIntervalSince(at) >= renewalAge
    }
}
