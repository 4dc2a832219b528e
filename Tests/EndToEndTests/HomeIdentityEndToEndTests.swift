import Foundation
import HubTestSupport
import NotificationHubs
import Testing

/// Issue 28, finding 4: a home keeps its identity. A corrupt `defaults.json` costs the
/// preferences only, and the window says so; a window follows its home when it changes on
/// disk.
@Suite(
    .tags(.live, .tmux), .fullSuiteOnly, .serialized, .enabled(if: Tmux.isAvailable, "tmux is needed; 'make test' installs it"))
struct HomeIdentityEndToEndTests {
    static func installationId(_ user: Command) async throws -> String {
        let json = try JSONValue(parsing: try await user.run(["categories", "--json"]).stdout)
        return try #require(json["installationId"]?.stringValue)
    }

    /// The issue's afternoon: a corrupt defaults.json, the window opened on it, the file put
    /// back with the window open, then news. The installation is the same throughout, the
    /// window says what happened, and the news arrives without a relaunch.
    @Test func aCorruptDefaultsFileKeepsTheInstallationAndTheWindowSaysWhy() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let user = Command.freshHome(extra: ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description])
            #expect(try await user.run(["subscribe", "World"]).status == 0)
            let before = try await Self.installationId(user)
            let defaultsFile = user.home.appendingPathComponent("config/defaults.json")
            let saved = try Data(contentsOf: defaultsFile)
            try Data(#"{"BreakingNewsCategories": ["World""#.utf8).write(to: defaultsFile)

            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("c", of: user, hub: hub.listen)
            var screen = try await tmux.waitFor("c") { $0.contains("A file could not be read") }
            #expect(screen.contains("was not valid JSON"), "\(screen)")
            try await tmux.keys("c", "Enter")
            screen = try await tmux.waitFor("c") { $0.contains("✓ Registered World") }
            #expect(screen.contains("[  ON ] World"), "the selection came back from the registration: \(screen)")
            #expect(try await Self.installationId(user) == before)

            // The file put back with the window open: the same installation still receives.
            try saved.write(to: defaultsFile)
            let client = try HubClient(connectionString: hub.full)
            _ = try await client.send(.template(["messageParam": "Breaking World News : still here"]), tagExpression: "World")
            try await tmux.waitFor("c") { $0.contains("Notification: Breaking World News : still here") }
            #expect(try await Self.installationId(user) == before)
        }
    }

    /// A window whose home changes on disk (here: another home's files copied in, as a
    /// restore from a backup does) follows it — categories, identity and stream.
    @Test func aWindowFollowsItsHomeWhenItChangesOnDisk() async throws {
        try await HubProcess.with(directory: TestHub.temporaryDirectory()) { hub in
            let extra = ["BREAKING_NEWS_CONNECTION_STRING": hub.listen.description]
            let mine = Command.freshHome(extra: extra)
            let other = Command.freshHome(extra: extra)
            #expect(try await mine.run(["subscribe", "World"]).status == 0)
            #expect(try await other.run(["subscribe", "Sports"]).status == 0)
            let tmux = Tmux()
            defer { tmux.killServer() }
            try await tmux.startUI("f", of: mine, hub: hub.listen)
            try await tmux.waitFor("f") { $0.contains("✓ Registered World") }

            // Every file of the other home that says who it is and what it chose.
            for folder in ["config", "data"] {
                let from = other.home.appendingPathComponent(folder)
                for name in try FileManager.default.contentsOfDirectory(atPath: from.path)
                where name.hasSuffix(".json") && !name.hasPrefix("inbox") {
                    let target = mine.home.appendingPathComponent("\(folder)/\(name)")
                    let temporary = target.appendingPathExtension("copy")
                    try FileManager.default.copyItem(at: from.appendingPathComponent(name), to: temporary)
                    // Renamed over the old file, as a restore (or an atomic write) does.
                    #expect(rename(temporary.path, target.path) == 0)
                }
            }
            var screen = try await tmux.waitFor("f") { $0.contains("✓ Registered Sports") }
            #expect(screen.contains("[  ON ] Sports") && screen.contains("[ OFF ] World"), "\(screen)")
            let client = try HubClient(connectionString: hub.full)
            _ = try await client.send(.template(["messageParam": "Breaking Sports News : followed"]), tagExpression: "Sports")
            screen = try await tmux.waitFor("f") { $0.contains("Notification: Breaking Sports News : followed") }
            #expect(try await Self.installationId(mine) == (try await Self.installationId(other)))
        }
    }
}
