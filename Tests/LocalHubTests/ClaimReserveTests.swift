import AsyncHTTPClient
import Foundation
import HubTestSupport
import NIOHTTP1
import NotificationHubs
import TestTiers
import Testing

@testable import LocalHub

/// The claim table's reserve (issue 49): a /48 of distinct /64s claiming every token its rate
/// allows once filled the table for the claim lifetime (7 days), and new terminals got 403.
@Suite struct ClaimReserveTests {
    /// A claim of a random token from `client` (an `X-Forwarded-For` the hub trusts).
    static func claim(_ hub: TestHub, from client: String) async throws -> Int {
        var request = HTTPClientRequest(url: hub.baseURL + BuiltInPushDelivery.path(hub: "news", device: randomDevice()))
        request.method = .PUT
        request.headers.add(name: "Authorization", value: hub.token(hub.listen))
        request.headers.add(name: "X-Forwarded-For", value: client)
        let response = try await HubClient.sharedHTTPClient.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }

    @Test(.tags(.live), .fullSuiteOnly) func aNewTerminalSubscribesAndStreamsWhileNetworksHoldEveryClaimTheyMay()
        async throws
    {
        try await TestHub.with(configure: {
            $0.maximumInstallationsPerHub = 100
            $0.clientRates = ClientRates(newDevicesPerHour: 2, bytesPerHour: 0, streams: 0)
            $0.trustedProxies = try! TrustedProxies(["127.0.0.1"])
            $0.claimReserveWindow = .seconds(4)
        }) { hub in
            let full = try hub.client(hub.full)
            // Four /48s, each trying 8 /64s in each of 8 /56s: 32 new devices a /48 may add, 128 in all.
            var statuses: [Int: Int] = [:]
            for network in 1...4 {
                for slash56 in 0..<8 {
                    for slash64 in 0..<8 {
                        let address = String(format: "2001:db8:%x:%x::1", network, slash56 << 8 | slash64)
                        statuses[try await Self.claim(hub, from: address), default: 0] += 1
                    }
                }
            }
            #expect(ClaimKeeper.reserve(of: 100) == 25)
            // The table holds 100; a slow machine may have let a reserve claim go while the
            // networks were still claiming, which made room for one more.
            #expect(statuses[200, default: 0] >= 100, "\(statuses)")
            #expect(statuses[429] == 128 && statuses[200, default: 0] + statuses[403, default: 0] == 128, "\(statuses)")
            // The last quarter, claimed by tokens no installation follows, is let go after the
            // window; the networks have nothing left to spend on it.
            try await eventually("the reserve's claims let go") {
                try await full.builtInPushDevices().count(where: \.claimed) == 75 ? true : nil
            }
            let networksAgain = try await Self.claim(hub, from: "2001:db8:1:aa::1")
            #expect(networksAgain == 429, "a /48 that spent its share waits")
            // A terminal subscribes: claims, registers, streams, and gets the news.
            let terminal = try hub.client(hub.listen)
            let device = randomDevice()
            let secret = try #require(try await terminal.claimBuiltInPushDevice(device).secret)
            try await terminal.createOrUpdateInstallation(
                newsInstallation("t", device: device, tags: ["World"]), claimSecret: secret)
            let stream = try await terminal.deviceStream(device: device, after: nil, epoch: nil, secret: secret)
            _ = try await full.send(.template(["messageParam": "Quake hits coast"]), tagExpression: "World")
            var alerts: [String] = []
            for try await batch in stream {
                alerts += batch.deliveries.compactMap(\.alertText)
                if !alerts.isEmpty { break }
            }
            #expect(alerts == ["Quake hits coast"])
            // Past its window, the terminal's claim is kept: an installation followed it.
            try await Task.sleep(for: .seconds(6))
            let devices = try await full.builtInPushDevices()
            #expect(devices.count(where: \.claimed) == 76)
            #expect(devices.first { $0.device == device }?.claimed == true)
        }
    }
}
