import Foundation
import HubTestSupport
import NIOCore
import TestTiers
import Testing

@testable import LocalHub

/// `/metrics` is this machine's unless a token says otherwise (issue 26, item 5): on `main` it
/// answered installation, registration, stream and send counts to anyone.
@Suite struct MetricsAccessTests {
    /// Live: "this machine" is the peer of a real connection.
    @Test(.tags(.live), .fullSuiteOnly) func metricsAreOpenToThisMachineOnly() async throws {
        try await TestHub.with { hub in
            let direct = try await raw(.GET, hub.baseURL + "/metrics")
            #expect(direct.status == 200 && direct.body.contains("hub_installations"))
            // Through a proxy (any forwarding header), with no token configured: refused.
            for header in ["X-Forwarded-For", "Forwarded", "X-Real-IP"] {
                let proxied = try await raw(.GET, hub.baseURL + "/metrics", headers: [(header, "203.0.113.9")])
                #expect(proxied.status == 403, "\(header)")
                #expect(!proxied.body.contains("hub_installations"))
                #expect(proxied.errorDetail?.contains("--metrics-token-file") == true)
            }
        }
    }

    @Test(.tags(.live), .fullSuiteOnly) func otherPeersNeedTheBearerToken() async throws {
        try await TestHub.with(configure: { $0.metricsToken = "s3cret-metrics-token" }) { hub in
            let proxied = [("X-Forwarded-For", "203.0.113.9")]
            let none = try await raw(.GET, hub.baseURL + "/metrics", headers: proxied)
            #expect(none.status == 401 && none.headers.first(name: "WWW-Authenticate") == "Bearer")
            let wrong = try await raw(.GET, hub.baseURL + "/metrics", headers: proxied + [("Authorization", "Bearer nope")])
            #expect(wrong.status == 401)
            let sas = try await raw(.GET, hub.baseURL + "/metrics", headers: proxied + [("Authorization", hub.token(hub.full))])
            #expect(sas.status == 401, "a SAS token is not the metrics token")
            let right = try await raw(
                .GET, hub.baseURL + "/metrics", headers: proxied + [("Authorization", "Bearer s3cret-metrics-token")])
            #expect(right.status == 200 && right.body.contains("hub_installations"))
        }
    }

    @Test func aPeerOfAnotherMachineIsNotDirect() throws {
        let remote = RequestClient.of(
            peer: try SocketAddress(ipAddress: "192.0.2.4", port: 1), forwardedFor: [], trusted: .none)
        #expect(!remote.directLoopback)
        let local = RequestClient.of(peer: try SocketAddress(ipAddress: "::1", port: 1), forwardedFor: [], trusted: .none)
        #expect(local.directLoopback)
    }
}
