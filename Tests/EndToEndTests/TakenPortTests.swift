import Foundation
import HubTestSupport
import LocalHubSupport
import TestTiers
import Testing

/// Two homes on one port: the second says at once who holds it and what to do, instead of
/// waiting for a hub that cannot listen there, or printing keys that hub would refuse.
@Suite(.tags(.live), .fullSuiteOnly, .serialized) struct TakenPortTests {
    @Test func aSecondHomeOnATakenPortSaysWhoHoldsIt() async throws {
        let first = Command.freshHome()
        defer { _ = try? first.start(["hub", "stop"]) }
        let subscribed = try await first.run(["subscribe", "World"])
        #expect(subscribed.status == 0, "\(subscribed.stderr)")
        let firstHub = first.home.appendingPathComponent("data/hub")
        let holder = try #require(LocalHubState.read(firstHub.appendingPathComponent(LocalHubState.fileName)))
        let port = try #require(holder.port)

        // A second home, told to use the port the first one's hub holds.
        let second = Command.freshHome(extra: ["BREAKING_NEWS_HUB_PORT": String(port)])
        defer { _ = try? second.start(["hub", "stop"]) }
        func expectTheHolderNamed(_ result: Command.Result, _ command: String) {
            #expect(result.status == 3, "\(command): \(result.stderr)")
            #expect(result.stdout.isEmpty, "\(command) printed \(result.stdout)")
            #expect(result.stderr.contains("port \(port)"), "\(command): \(result.stderr)")
            #expect(result.stderr.contains("pid \(holder.pid)"), "\(command): \(result.stderr)")
            #expect(result.stderr.contains(firstHub.resolvingSymlinksInPath().path), "\(command): \(result.stderr)")
            #expect(result.stderr.contains("BREAKING_NEWS_HUB_PORT"), "\(command): \(result.stderr)")
            #expect(result.stderrLines.count == 1, "\(command): \(result.stderr)")
        }
        expectTheHolderNamed(try await second.run(["subscribe", "World"]), "subscribe")
        expectTheHolderNamed(try await second.run(["hub", "status"]), "hub status")
        expectTheHolderNamed(try await second.run(["hub", "connection-strings"]), "hub connection-strings")
        // The second home started no hub of its own, and the first one's still answers.
        #expect(LocalHubState.read(second.home.appendingPathComponent("data/hub/\(LocalHubState.fileName)")) == nil)
        let status = try await first.run(["hub", "status"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.hasPrefix("running: pid \(holder.pid)"))

        // With a port of its own, the second home gets a hub of its own.
        var elsewhere = second
        elsewhere.environment["BREAKING_NEWS_HUB_PORT"] = "0"
        let own = try await elsewhere.run(["subscribe", "World"])
        #expect(own.status == 0, "\(own.stderr)")
    }
}
