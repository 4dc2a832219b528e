import Foundation
import Logging

/// The real push services a server delivers through, made from its providers file: one
/// client per hub and service, each hub's credentials its own.
struct ExternalPushServices: Sendable {
    let services: [any PushService]
    private let clients: [any PushClient]

    /// Reads `file` (or nothing, when there is none) and makes the clients; names the hubs
    /// the file has credentials for that this server does not serve.
    static func load(_ file: URL?, hubs: [String], logger: Logger) async throws(PushCredentialsError) -> ExternalPushServices {
        guard let file else { return ExternalPushServices(services: [], clients: []) }
        let credentials = try PushCredentials.load(file)
        let served = Set(hubs.map { $0.lowercased() })
        for name in credentials.hubs.keys.sorted() where !served.contains(name) {
            logger.warning("\(file.path) has credentials for the hub '\(name)', which this server does not serve")
        }
        // Each kind's clients by hub, in the kinds' order.
        var byKind: [PushServiceKind: [String: any PushClient]] = [:]
        var made: [any PushClient] = []
        var failure: PushCredentialsError?
        for (hub, entry) in credentials.hubs.sorted(by: { $0.key < $1.key }) where served.contains(hub) {
            var what = "apns"
            do {
                func add(_ kind: PushServiceKind, _ client: any PushClient) {
                    byKind[kind, default: [:]][hub] = client
                    made.append(client)
                }
                if let credential = entry.apns { add(.apns, try APNsClient(credential)) }
                what = "fcmV1"
                if let credential = entry.fcmV1 { add(.fcmV1, try FCMv1Client(credential)) }
                what = "webPush"
                if let credential = entry.webPush { add(.webPush, try WebPushClient(credential)) }
                let kinds = [
                    entry.apns.map { _ in "APNs" }, entry.fcmV1.map { _ in "FCM v1" }, entry.webPush.map { _ in "Web Push" },
                ]
                logger.info("hub '\(hub)' delivers through \(kinds.compactMap { $0 }.joined(separator: ", "))")
            } catch {
                failure = PushCredentialsError(file.path, "hubs.\(hub).\(what) cannot be used: \(error)")
                break
            }
        }
        if let failure {
            // The clients made so far are closed: the hub does not start.
            for client in made { await client.shutdown() }
            throw failure
        }
        let services: [any PushService] = byKind.sorted { $0.key < $1.key }.map { kind, clients in
            switch kind {
            case .fcmV1: ExternalPushService(kind, platform: .fcmV1, rules: .fcmV1, clients: clients)
            case .webPush: ExternalPushService(kind, platform: .browser, rules: .webPush, clients: clients)
            case .apns, .builtIn: ExternalPushService(kind, platform: .apns, rules: .apns, clients: clients)
            }
        }
        return ExternalPushServices(services: services, clients: made)
    }

    /// Closes every connection.
    func shutdown() async {
        for client in clients { await client.shutdown() }
    }
}
