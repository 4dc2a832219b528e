import Foundation
import Logging

/// The real push services a server delivers through, made from its providers file: one
/// client per hub and service, each hub's credentials its own.
struct PushProviders: Sendable {
    let services: [any PushService]
    private let closers: [@Sendable () async -> Void]

    /// Reads `file` (or nothing, when there is none) and makes the clients; names the hubs
    /// the file has credentials for that this server does not serve.
    static func load(_ file: URL?, hubs: [String], logger: Logger) async throws(ProviderConfigError) -> PushProviders {
        guard let file else { return PushProviders(services: [], closers: []) }
        let credentials = try ProviderCredentials.load(file)
        let served = Set(hubs.map { $0.lowercased() })
        for name in credentials.hubs.keys.sorted() where !served.contains(name) {
            logger.warning("\(file.path) has credentials for the hub '\(name)', which this server does not serve")
        }
        var apns: [String: APNsClient] = [:]
        var webPush: [String: WebPushClient] = [:]
        var fcm: [String: FCMv1Client] = [:]
        var closers: [@Sendable () async -> Void] = []
        var failure: ProviderConfigError?
        for (hub, entry) in credentials.hubs.sorted(by: { $0.key < $1.key }) where served.contains(hub) {
            var what = "apns"
            do {
                if let credential = entry.apns {
                    let client = try APNsClient(credential)
                    apns[hub] = client
                    closers.append { await client.shutdown() }
                }
                what = "fcmV1"
                if let credential = entry.fcmV1 {
                    let client = try FCMv1Client(credential)
                    fcm[hub] = client
                    closers.append { await client.shutdown() }
                }
                what = "webPush"
                if let credential = entry.webPush {
                    let client = try WebPushClient(credential)
                    webPush[hub] = client
                    closers.append { await client.shutdown() }
                }
            } catch {
                failure = ProviderConfigError(file.path, "hubs.\(hub).\(what) cannot be used: \(error)")
                break
            }
        }
        if let failure {
            // The clients made so far are closed: the hub does not start.
            for close in closers { await close() }
            throw failure
        }
        var services: [any PushService] = []
        if !apns.isEmpty { services.append(APNsPushService(clients: apns)) }
        if !fcm.isEmpty { services.append(FCMv1PushService(clients: fcm)) }
        if !webPush.isEmpty { services.append(WebPushService(clients: webPush)) }
        for (hub, entry) in credentials.hubs where served.contains(hub) {
            let kinds = [
                entry.apns.map { _ in "APNs" }, entry.fcmV1.map { _ in "FCM v1" }, entry.webPush.map { _ in "Web Push" },
            ]
            logger.info("hub '\(hub)' delivers through \(kinds.compactMap { $0 }.joined(separator: ", "))")
        }
        return PushProviders(services: services, closers: closers)
    }

    /// Closes every connection.
    func shutdown() async {
        for close in closers { await close() }
    }
}
