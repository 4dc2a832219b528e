import NotificationHubs

/// Web Push for the hubs that have VAPID keys: each browser installation's message
/// encrypted for its subscription and posted to its endpoint on the hub's `WebPushClient`,
/// the answer mapped to the service's outcome names.
final class WebPushService: PushService {
    /// By lower-cased hub name.
    private let clients: [String: WebPushClient]

    var kind: PushServiceKind { .webPush }
    var platform: Platform { .browser }
    var keepsDeliveryLog: Bool { false }

    init(clients: [String: WebPushClient]) {
        self.clients = clients
    }

    func serves(hub: String) -> Bool { clients[hub.lowercased()] != nil }

    func check(_ payload: [UInt8]) -> PushOutcome? {
        WebPushClient.check(payload).map { .refused(name: "InvalidNotificationSize", text: "The payload is too large: \($0)") }
    }

    func push(_ sends: [PushSend]) async -> [[PushOutcome]] {
        await ProviderFanOut.push(sends) { send, delivery in
            guard let client = self.clients[send.notification.hub.lowercased()] else {
                return .refused(name: "PnsUnavailable", text: "The hub has no Web Push keys")
            }
            guard let keys = delivery.webPushKeys else {
                return .gone(name: "BadChannel", text: "The browser's subscription has no keys")
            }
            let answer = await client.send(
                endpoint: delivery.device, p256dh: keys.p256dh, auth: keys.auth, payload: Array(delivery.payload.utf8),
                headers: send.notification.headers)
            return Self.outcome(answer)
        }
    }

    /// What each answer counts as: a subscription the service no longer knows (404, 410),
    /// or one the hub cannot write to (its endpoint or keys are not usable), ends the
    /// channel; the rest are counted.
    static func outcome(_ answer: ProviderAnswer) -> PushOutcome {
        switch answer {
        case .delivered:
            return .delivered
        case .unreachable(let why):
            return .refused(name: "PnsUnreachable", text: "The Web Push service could not be reached: \(why)")
        case .refused(let status, let reason):
            let text = "The Web Push service answered \(status) \(reason)"
            switch (status, reason) {
            case (404, _), (410, _): return .gone(name: "ExpiredChannel", text: text)
            case (400, "BadEndpoint"), (400, "BadP256dh"), (400, "BadAuth"):
                return .gone(name: "BadChannel", text: "The browser's subscription cannot be used: \(reason)")
            case (401, _), (403, _): return .refused(name: "InvalidCredentials", text: text)
            case (413, _): return .refused(name: "InvalidNotificationSize", text: text)
            case (429, _): return .refused(name: "Throttled", text: text)
            case (503, _): return .refused(name: "PnsUnavailable", text: text)
            case (500..., _): return .refused(name: "PnsServerError", text: text)
            default: return .refused(name: "PnsInterfaceError", text: text)
            }
        }
    }
}
