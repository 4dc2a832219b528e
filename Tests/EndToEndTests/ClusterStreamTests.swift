import Foundation
import HubTestSupport
import LocalHubSupport
import NotificationHubs
import TestTiers
import Testing

/// Read-your-writes reaches the device stream: on a cluster a node's tables follow the change
/// log, so a stream opened right after its claim was acknowledged — by this node or another —
/// found the device unknown now and then (404 "The device is not registered").
@Suite(.tags(.live, .postgres), .fullSuiteOnly) struct ClusterStreamTests {
    @Test(.timeLimit(.minutes(3))) func aStreamOpenedRightAfterItsClaimIsServedOnEveryNode() async throws {
        let server = try await PostgresServer.shared()
        let database = try await server.createDatabase()
        let folders = (0..<2).map { _ in TestHub.temporaryDirectory() }
        var nodes: [HubProcess] = []
        defer { for node in nodes { node.process.signal(SIGKILL) } }
        for (index, folder) in folders.enumerated() {
            nodes.append(try await HubProcess.start(directory: folder, arguments: ["--store", database, "--node", "n\(index)"]))
        }
        let clients = nodes.map { HubClient(connectionString: $0.listen, hub: "news", retryPolicy: .none) }
        for round in 0..<40 {
            let device = randomDevice()
            let secret = try await clients[0].claimBuiltInPushDevice(device).secret
            // Alternately on the node that took the claim and on the other one, with its secret.
            let stream = try await clients[round % 2].deviceStream(device: device, after: nil, epoch: nil, secret: secret)
            _ = stream
        }
    }
}
