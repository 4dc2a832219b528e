import BreakingNewsKit
import Foundation
import NotificationHubs
import Testing

/// The installation's expiry and when an open window renews it.
@Suite struct RegistrationRenewalTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    func record(_ state: RegistrationRecord.State, ago: TimeInterval) -> RegistrationRecord {
        RegistrationRecord(
            state: state, at: W3CDate.format(Self.now.addingTimeInterval(-ago)), categories: ["World"], hub: "http://h/news")
    }

    @Test func aRegistrationIsRenewedOnceADayOld() {
        #expect(!RegistrationRenewal.isDue(record(.registered, ago: 0), now: Self.now))
        #expect(!RegistrationRenewal.isDue(record(.registered, ago: 86_399), now: Self.now))
        #expect(RegistrationRenewal.isDue(record(.registered, ago: 86_400), now: Self.now))
        #expect(RegistrationRenewal.isDue(record(.registered, ago: 89 * 86_400), now: Self.now))
        // Renewed long before it would expire: a day old leaves 89 days.
        #expect(RegistrationRenewal.lifetime - RegistrationRenewal.renewalAge == 89 * 86_400)
    }

    @Test func pendingIsTriedAgainFailedAndUnregisteredAreNot() {
        #expect(RegistrationRenewal.isDue(record(.pending, ago: 10), now: Self.now))
        #expect(!RegistrationRenewal.isDue(record(.failed, ago: 100 * 86_400), now: Self.now))
        #expect(!RegistrationRenewal.isDue(nil, now: Self.now))
        // A date it cannot read is renewed rather than left to expire.
        let unreadable = RegistrationRecord(state: .registered, at: "yesterday", categories: [], hub: "http://h/news")
        #expect(RegistrationRenewal.isDue(unreadable, now: Self.now))
    }

    @Test func theInstallationNamesAnExpiryNinetyDaysAhead() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("renewal-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let profile = try NewsProfile(
            paths: Paths(
                configDirectory: root.appendingPathComponent("config"), dataDirectory: root.appendingPathComponent("data")),
            catalog: try NewsCatalog.load())
        let closed = try ConnectionString(parsing: "Endpoint=http://127.0.0.1:1/;SharedAccessKeyName=k;SharedAccessKey=v")
        let subscriber = profile.subscriber(HubEndpoint(listen: closed, send: closed, hubName: "news"))
        let installation = subscriber.installation([], now: Self.now)
        #expect(installation.expirationTime == W3CDate.format(Self.now.addingTimeInterval(90 * 86_400)))
    }
}
