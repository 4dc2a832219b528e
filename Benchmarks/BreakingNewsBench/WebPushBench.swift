import Crypto
import Foundation
import HubTestSupport
import LocalHub
import NotificationHubs

/// A browser's news through the hub's Web Push client, timed from the send's 201 to the
/// loopback push service decrypting it: alone (the peer row), beside 120 subscriptions of the
/// same service that answer 503 with `Retry-After: 60`, and beside 100 origins that accept
/// connections and never answer. Targets: the news arrives before the first `Retry-After`
/// would have ended (60 s), and before a silent origin's request times out (10 s).
func webPushFairness(runs: Int) async throws -> [BenchRow] {
    let vapidKey = P256.Signing.PrivateKey()
    let peer = WebPushPeer(vapidKey: vapidKey.publicKey)
    return try await peer.serve { _ in
        let config = output.appendingPathComponent("webpush-config")
        try? FileManager.default.removeItem(at: config)
        let providersFile = try WebPushProviders.write(
            in: config, vapidKey: vapidKey, caFile: peer.certificateFile, allowPrivateEndpoints: true, hub: "breakingnews")

        func measure(_ label: String, load: (HubClient, Int) async throws -> Void) async throws -> Double {
            let hub = try await BenchHub.start(
                binary: binary, directory: output.appendingPathComponent("webpush-hub"),
                arguments: ["--config", providersFile.path])
            defer { hub.stop() }
            let listen = try HubClient(connectionString: hub.listen)
            let full = try HubClient(connectionString: hub.full)
            let browser = peer.subscribe()
            try await listen.createOrUpdateInstallation(benchBrowser("browser", browser.endpoint, browser.p256dh, browser.auth))
            try await load(listen, 0)
            var times: [Double] = []
            for run in 0..<runs {
                let text = "\(label) \(run) \(UUID().uuidString)"
                let start = ContinuousClock.now
                _ = try await full.send(.template(["messageParam": text]), tagExpression: "World")
                let deadline = start + .seconds(120)
                while !peer.received.contains(where: {
                    $0.subscription == browser.id && String(decoding: $0.plaintext ?? [], as: UTF8.self).contains(text)
                }) {
                    guard ContinuousClock.now < deadline else { throw BenchError(description: "\(label): never arrived") }
                    try await Task.sleep(for: .milliseconds(2))
                }
                times.append((ContinuousClock.now - start).seconds * 1000)
                log("web push \(label) run \(run + 1): \(String(format: "%.1f", times.last!)) ms")
            }
            return median(times)
        }

        let idle = try await measure("alone") { _, _ in }
        let busy = try await measure("beside 120 asking to wait") { listen, _ in
            for i in 0..<120 {
                let s = peer.subscribe(.fail(status: 503, times: 1_000_000, retryAfter: "60"))
                try await listen.createOrUpdateInstallation(benchBrowser("busy\(i)", s.endpoint, s.p256dh, s.auth))
            }
        }
        let silent = try await SilentListeners.with(count: 100) { ports in
            try await measure("beside 100 silent origins") { listen, _ in
                for (i, port) in ports.enumerated() {
                    let s = peer.subscribe()
                    try await listen.createOrUpdateInstallation(
                        benchBrowser("silent\(i)", "https://127.0.0.1:\(port)/push/\(i)", s.p256dh, s.auth))
                }
            }
        }
        let peerName = "the same send, alone"
        return [
            BenchRow(
                scenario: "Web Push: a browser's news beside 120 endpoints answering 503, Retry-After 60", value: busy,
                unit: "ms", target: "< 60000", met: busy < 60_000, peer: peerName, peerValue: idle, ratio: busy / idle),
            BenchRow(
                scenario: "Web Push: a browser's news beside 100 origins that never answer", value: silent, unit: "ms",
                target: "< 10000", met: silent < 10_000, peer: peerName, peerValue: idle, ratio: silent / idle),
        ]
    }
}

/// A browser installation on World.
func benchBrowser(_ id: String, _ endpoint: String, _ p256dh: String, _ auth: String) -> Installation {
    var installation = Installation(
        installationId: id, platform: .browser, pushChannel: nil, tags: ["World"],
        templates: ["web": InstallationTemplate(body: #"{"body":"$(messageParam)"}"#)])
    installation.pushChannel = .browser(endpoint: endpoint, p256dh: p256dh, auth: auth)
    return installation
}
