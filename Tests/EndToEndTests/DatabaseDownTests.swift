import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import TestTiers
import Testing

/// A node whose database is down, while the device and the node are known in memory.
@Suite(.tags(.live, .postgres), .fullSuiteOnly) struct DatabaseDownTests {
    /// A device stream is answered once the hub has read the device's backlog: a 200 means
    /// the stream is established, and a backlog the hub cannot read is a 503 with
    /// Retry-After, not a 200 whose body breaks off.
    @Test(.timeLimit(.minutes(3))) func aStreamWhoseBacklogCannotBeReadIsRefusedWithA503() async throws {
        try await PostgresServer.with { server in
            let database = try await server.createDatabase()
            let node = try await HubProcess.start(
                directory: TestHub.temporaryDirectory(),
                // One stream at a time from this address: a place the refused stream kept
                // would refuse every stream after it with a 429.
                arguments: ["--store", database, "--node", "n0", "--client-streams", "1"])
            defer { node.process.signal(SIGKILL) }
            let client = HubClient(connectionString: node.listen, hub: "news", retryPolicy: .none)
            let device = randomDevice()
            let secret = try #require(try await client.claimBuiltInPushDevice(device).secret)
            // The node knows the device from its own tables; only the backlog needs the database.
            try await server.pause()
            do {
                _ = try await client.deviceStream(device: device, after: nil, epoch: nil, secret: secret)
                Issue.record("the stream was answered while its backlog could not be read")
            } catch {
                let refusal = error as? HubError
                #expect(refusal?.status == 503 && refusal?.retryAfter != nil, "\(error)")
            }
            try await server.resume()
            // The refused stream gave its place back, and the stream opens once the database is back.
            let deadline = ContinuousClock.now + .seconds(30)
            var (opened, refusals) = (false, [Int]())
            while !opened && ContinuousClock.now < deadline {
                do {
                    _ = try await client.deviceStream(device: device, after: nil, epoch: nil, secret: secret)
                    opened = true
                } catch {
                    refusals.append((error as? HubError)?.status ?? 0)
                    try await Task.sleep(for: .milliseconds(200))
                }
            }
            #expect(opened, "no stream opened within 30 s of the database's return: \(refusals)")
            #expect(!refusals.contains(429), "the refused stream kept its place: \(refusals)")
        }
    }

    /// `/healthz` of a hub whose database does not answer is a 503 that still carries the
    /// proof of its folder's secret: a command of that home finds its hub there (and is told
    /// the database is down by the request it makes), where it took it for an impostor, tried
    /// to start a second hub and said, after 15 s, that the hub did not start.
    @Test(.timeLimit(.minutes(3))) func theHubOfAHomeIsStillItsHubWhileItsDatabaseIsDown() async throws {
        try await PostgresServer.with { server in
            let database = try await server.createDatabase()
            // The hub of a home, as its commands find it.
            let home = Command.freshHome()
            let directory = home.home.appendingPathComponent("data/hub")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let node = try await HubProcess.start(directory: directory, arguments: ["--store", database, "--node", "n0"])
            defer { node.process.signal(SIGKILL) }
            let state = try #require(LocalHubState.read(directory.appendingPathComponent(LocalHubState.fileName)))
            try await server.pause()
            // The node finds its database gone at its next read: its health says so within seconds.
            let deadline = ContinuousClock.now + .seconds(30)
            var health = await HubClient.health(baseURL: state.url, query: "", header: LocalHubProof.header)
            while health?.status != 503 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
                health = await HubClient.health(baseURL: state.url, query: "", header: LocalHubProof.header)
            }
            try #require(health?.status == 503, "\(String(describing: health?.status))")
            // Busy cores can make the hub miss the probe's 2 s; that is asked again, never trusted less.
            #expect(try await verifyAllowingBusyCores(state) == state)
            let status = try await home.run(["hub", "status"])
            #expect(status.status == 3 && status.stdout.hasPrefix("running: pid \(state.pid)"), "\(status.stdout)")
            #expect(status.stderr.contains("its database does not answer now"), "\(status.stderr)")
            try await server.resume()
        }
    }
}
