import BreakingNewsKit
import Foundation
import NotificationHubs
import Testing

/// Issue 28, finding 4: who a terminal is lives apart from its preferences.
struct HomeIdentityTests {
    static let catalog = try! NewsCatalog.load()

    static func paths() -> Paths {
        let root = temporaryFolder()
        return Paths(configDirectory: root.appendingPathComponent("config"), dataDirectory: root.appendingPathComponent("data"))
    }

    /// A home of an earlier version kept its identity and last registration in defaults.json:
    /// they move to installation.json once, and the defaults keep the preferences only. Its
    /// token, made before claims had secrets (it may have been shown to others), is replaced
    /// once: the old one is kept as the previous token until it is retired.
    @Test func anEarlierHomesIdentityMovesOutOfTheDefaultsOnce() throws {
        let paths = Self.paths()
        let token = DeviceIdentity.randomToken()
        let record = RegistrationRecord(state: .registered, at: "2026-11-21T10:00:00Z", categories: ["World"], hub: "h")
        try DefaultsStore(url: paths.defaultsFile).save(
            .init(categories: ["World"], installationId: "kept-id", deviceToken: token, lastRegistration: record))
        let profile = try NewsProfile(paths: paths, catalog: Self.catalog)
        #expect(profile.identity.installationId == "kept-id" && profile.identity.deviceToken != token)
        #expect(profile.identity.previousDeviceToken == token && profile.identity.claimSecret == nil)
        #expect(profile.lastRegistration == record)
        let defaults = try String(contentsOf: paths.defaultsFile, encoding: .utf8)
        #expect(defaults == #"{"BreakingNewsCategories":["World"]}"# + "\n", "\(defaults)")
        let installation = try JSONValue(parsing: Data(contentsOf: paths.installationFile))
        #expect(installation["installationId"]?.stringValue == "kept-id")
        let attributes = try FileManager.default.attributesOfItem(atPath: paths.installationFile.path)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        // Opened again: the same, from installation.json.
        #expect(try NewsProfile(paths: paths, catalog: Self.catalog).identity == profile.identity)
    }

    /// A corrupt defaults.json costs the preferences only: the identity stays, the selection
    /// comes back from the last registration, and the warning says so.
    @Test func aCorruptDefaultsFileKeepsTheIdentityAndTheSelection() throws {
        let paths = Self.paths()
        let first = try NewsProfile(paths: paths, catalog: Self.catalog)
        let record = RegistrationRecord(
            state: .registered, at: "2026-11-21T10:00:00Z", categories: ["World", "Sports"], hub: "h")
        try first.installations.update { $0.lastRegistration = record }
        try FileManager.default.createDirectory(at: paths.configDirectory, withIntermediateDirectories: true)
        try Data(#"{"BreakingNewsCategories": ["World""#.utf8).write(to: paths.defaultsFile)
        let reopened = try NewsProfile(paths: paths, catalog: Self.catalog)
        #expect(reopened.identity == first.identity)
        #expect(reopened.selectedCategories.map(\.name) == ["World", "Sports"])
        let warning = try #require(reopened.warning)
        #expect(warning.contains("was not valid JSON"), "\(warning)")
        #expect(warning.contains("restored from the last registration (World, Sports)"), "\(warning)")
        #expect(warning.contains("still installation \(first.identity.installationId)"), "\(warning)")
    }

    /// A window reads what the home holds now: a changed installation.json is another identity.
    @Test func theCurrentIdentityIsWhatTheFileHoldsNow() throws {
        let paths = Self.paths()
        let profile = try NewsProfile(paths: paths, catalog: Self.catalog)
        let other = DeviceIdentity(installationId: "other", deviceToken: DeviceIdentity.randomToken())
        try profile.installations.update {
            $0.installationId = other.installationId
            $0.deviceToken = other.deviceToken
        }
        #expect(profile.currentIdentity.installationId == "other")
        #expect(SharedHomeState.read(profile).identity?.deviceToken == other.deviceToken)
        #expect(profile.builtInPush(TestEndpoint.any).device == other.deviceToken.lowercased())
    }
}

/// An endpoint no call goes to.
enum TestEndpoint {
    static let any = HubEndpoint(
        listen: try! ConnectionString(parsing: "Endpoint=sb://127.0.0.1:1/;SharedAccessKeyName=k;SharedAccessKey=dg=="),
        send: try! ConnectionString(parsing: "Endpoint=sb://127.0.0.1:1/;SharedAccessKeyName=k;SharedAccessKey=dg=="),
        hubName: "news")
}
