import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import TestTiers
import Testing

/// A device stream is answered once the hub has read the device's backlog: a 200 means the
/// stream is established, and a backlog the hub cannot read is a 503 with Retry-After, not a
/// 200 whose body breaks off.
@Suite(.tags(.live, .postgres), .fullSuiteOnly) struct StreamAnswerTests {
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
            #expect(try await client.claimSandboxDevice(device))
            // The node knows the device from its own tables; only the backlog needs the database.
            try await server.pause()
            do {
                _ = try await client.deviceStream(device: device, after: nil, epoch: nil)
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
                    _ = try await client.deviceStream(device: device, after: nil, epoch: nil)
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
}
