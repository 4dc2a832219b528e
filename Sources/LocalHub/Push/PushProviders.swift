import Foundation
import Logging

/// The real push services a server delivers through, made from its providers file: one
/// client per hub and service, each hub's credentials its own.
struct PushProviders: Sendable {
    let services: [any PushService]
    private let apns: [APNsClient]

    /// Reads `file` (or nothing, when there is none) and makes the clients; names the hubs
    /// the file has credentials for that this server does not serve.
    static func load(_ file: URL?, hubs: [String], logger: Logger) throws(ProviderConfigError) -> PushProviders {
        guard let file else { return PushProviders(services: [], apns: []) }
        let credentials = try ProviderCredentials.load(file)
        let served = Set(hubs.map { $0.lowercased() })
        for name in credentials.hubs.keys.sorted() where !served.contains(name) {
            logger.warning("\(file.path) has credentials for the hub '\(name)', which this server does not serve")
        }
        var apns: [String: APNsClient] = [:]
        for (hub, entry) in credentials.hubs where served.contains(hub) {
            if let credential = entry.apns {
                do {
                    apns[hub] = try APNsClient(credential)
                } catch {
                    throw ProviderConfigError(file.path, "hubs.\(hub).apns cannot be used: \(error)")
                }
            }
        }
        var services: [any PushService] = []
        if !apns.isEmpty { services.append(APNsPushService(clients: apns)) }
        for (hub, entry) in credentials.hubs where served.contains(hub) {
            let kinds = [
                entry.apns.map { _ in "APNs" }, entry.fcmV1.map { _ in "FCM v1" }, entry.webPush.map { _ in "Web Push" },
            ]
            logger.info("hub '\(hub)' delivers through \(kinds.compactMap { $0 }.joined(separator: ", "))")
        }
        return PushProviders(services: services, apns: Array(apns.values))
    }

    /// Closes every connection.
    func shutdown() async {
        for client in apns { await client.shutdown() }
    }
}
