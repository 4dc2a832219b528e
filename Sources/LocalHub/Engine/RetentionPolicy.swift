import Foundation

/// What the hub keeps, and for how long (`hub serve --retention`, `--delivery-log-megabytes`,
/// `--installation-ttl`).
public struct RetentionPolicy: Sendable, Equatable {
    /// Deliveries and ended notifications older than this are removed.
    public var age: TimeInterval
    /// The most the delivery log may take: the oldest deliveries go first when it holds more.
    public var maximumLogBytes: Int64
    /// The expiry given to an installation or registration that names none; nil: never.
    public var installationTTL: TimeInterval?

    public init(age: TimeInterval, maximumLogBytes: Int64, installationTTL: TimeInterval?) {
        self.age = age
        self.maximumLogBytes = maximumLogBytes
        self.installationTTL = installationTTL
    }

    /// 30 days: a terminal away for a month (a holiday, a laptop in a drawer) still gets
    /// every message, about as long as FCM keeps one for an offline phone (four weeks).
    /// 1 GiB of log: at about 60 bytes a delivery, some 17 million deliveries — 10,000
    /// terminals getting 50 news a day for a month fit. An installation that names no expiry
    /// never expires, as on the service (which returns `9999-12-31T23:59:59.9999999Z`); the
    /// app names its own, 90 days ahead as the iOS SDK does, and renews it.
    public static let standard = RetentionPolicy(age: 30 * 86_400, maximumLogBytes: 1 << 30, installationTTL: nil)

    /// How often retention runs: a tenth of the age, from once a second to once an hour, so
    /// nothing stays much past its horizon.
    public var interval: Duration { .seconds(min(3600, max(1, age / 10))) }

}
