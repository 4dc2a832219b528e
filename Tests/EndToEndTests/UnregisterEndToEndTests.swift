import Foundation
import NotificationHubs
import Testing

/// `breaking-news unregister` and the installation's expiry, with the built binary on the
/// home's own hub.
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct UnregisterEndToEndTests {
    /// After a subscribe, a send and `unregister`, the hub holds nothing of the terminal: no
    /// installation, no claim, no delivery, and a new send matches nobody. The received log,
    /// the selection and the identity stay; the registration is forgotten.
    @Test func unregisterLeavesNothingOfTheTerminalOnTheHub() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        let sent = try await user.run(["send", "before", "--category", "World"])
        #expect(sent.status == 0, "\(sent.stderr)")
        let log = try await user.run(["log"])
        #expect(log.stdout.contains("Breaking World News : before"), "\(log.stdout) \(log.stderr)")
        let before = try await devices(user)
        #expect(before.count == 1 && before.first?["claimed"] == .bool(true), "\(before)")
        #expect(before.first?["deliveries"] == .number("1"), "\(before)")

        let unregistered = try await user.run(["unregister"])
        #expect(unregistered.status == 0, "\(unregistered.stderr)")
        #expect(unregistered.stdout.hasPrefix("Unregistered"), "\(unregistered.stdout)")

        // Nothing of the device: no claim, no delivery (the list names both).
        #expect(try await devices(user).isEmpty)
        let installation = try await user.run(["installation"])
        #expect(installation.status == 5, "\(installation.stdout) \(installation.stderr)")
        let after = try await user.run(["send", "after", "--category", "World"])
        #expect(after.status == 0, "\(after.stderr)")
        let id = try #require(after.stdout.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        var explained = try await user.run(["explain", id])
        for _ in 0..<100 where explained.stdout.hasPrefix("It is accepted") {
            try await Task.sleep(for: .milliseconds(50))
            explained = try await user.run(["explain", id])
        }
        #expect(explained.stdout.hasPrefix("Nothing matched"), "\(explained.stdout)")
        #expect(try await devices(user).isEmpty)

        // Here: the received log and the selection stay, the registration is forgotten.
        let kept = try await user.run(["log"])
        #expect(kept.stdout.contains("Breaking World News : before"), "\(kept.stdout) \(kept.stderr)")
        let categories = try await user.run(["categories", "--json"])
        let parsed = try JSONValue(parsing: categories.stdout)
        #expect(parsed["categories"] == .strings(["World"]))
        #expect(parsed["registration"] == nil, "\(categories.stdout)")
        // Done twice, it is still done.
        #expect(try await user.run(["unregister"]).status == 0)
        // And the next subscribe registers anew.
        #expect(try await user.run(["subscribe", "World"]).status == 0)
        #expect(try await user.run(["installation"]).status == 0)
    }

    /// The installation the app writes names an expiry 90 days ahead (renewed at every
    /// registration).
    @Test func theAppsInstallationExpiresNinetyDaysAhead() async throws {
        let user = Command.freshHome()
        defer { _ = try? user.start(["hub", "stop"]) }
        #expect(try await user.run(["subscribe", "Science"]).status == 0)
        let shown = try await user.run(["installation"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let expiry = try #require(try JSONValue(parsing: shown.stdout)["expirationTime"]?.stringValue)
        let date = try #require(W3CDate.parse(expiry), "\(expiry)")
        let ahead = date.timeIntervalSinceNow / 86_400
        #expect(ahead > 89.9 && ahead <= 90, "\(expiry)")
    }

    private func devices(_ user: Command) async throws -> [JSONValue] {
        let listed = try await user.run(["hub", "devices", "--json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        guard case .array(let items) = try JSONValue(parsing: listed.stdout) else { return [] }
        return items
    }
}
