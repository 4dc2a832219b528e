import HubTestSupport
import NotificationHubs
import Testing

@testable import LocalHub

/// Who uses a device token (`HubTables.ownersByDevice`), kept as installations come, change
/// device and go: many sharing one token, changed in place (it was copied per change).
@Suite struct HubTablesTests {
    @Test func theOwnersOfADeviceFollowItsInstallations() {
        var tables = HubTables(name: "news")
        let (shared, other) = (randomDevice(), randomDevice())
        let device = { (token: String) in TagIndex.device(token, platform: .apns) }
        for i in 0..<2000 { tables.setInstallation(newsInstallation("i\(i)", device: shared, tags: ["World"]), id: "i\(i)") }
        #expect(tables.ownersByDevice[device(shared)]?.count == 2000)
        // One moves to another token, one goes, the rest stay.
        tables.setInstallation(newsInstallation("i0", device: other, tags: ["World"]), id: "i0")
        tables.setInstallation(nil, id: "i1")
        #expect(tables.ownersByDevice[device(shared)]?.count == 1998)
        #expect(tables.ownersByDevice[device(other)] == [TagIndex.ownerKey(installation: "i0")])
        // The last one gone, the token is no one's.
        for i in 2..<2000 { tables.setInstallation(nil, id: "i\(i)") }
        #expect(tables.ownersByDevice[device(shared)] == nil)
        tables.setInstallation(nil, id: "i0")
        #expect(tables.ownersByDevice.isEmpty)
    }
}
