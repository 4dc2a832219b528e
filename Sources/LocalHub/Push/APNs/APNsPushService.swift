import NotificationHubs

/// Apple's push service for the hubs that have APNs credentials: each message sent on the
/// hub's `APNsClient`, APNs' answer mapped to the service's outcome names (wire spec §11.4).
/// Terminals' tokens never get here: the dispatcher routes them to the built-in sandbox.
final class APNsPushService: PushService {
    /// By lower-cased hub name.
    private let clients: [String: APNsClient]

    var kind: PushServiceKind { .apns }
    var platform: Platform { .apns }
    var keepsDeliveryLog: Bool { false }

    init(clients: [String: APNsClient]) {
        self.clients = clients
    }

    func serves(hub: String) -> Bool { clients[hub.lowercased()] != nil }

    func check(_ payload: [UInt8]) -> PushOutcome? {
        APNsPayloadRules.check(payload).map { .refused(name: $0.outcomeName, text: $0.outcomeText) }
    }

    func push(_ sends: [PushSend]) async -> [[PushOutcome]] {
        await ProviderFanOut.push(sends) { send, delivery in
            guard let client = self.clients[send.notification.hub.lowercased()] else {
                return .refused(name: "PnsUnavailable", text: "The hub has no APNs credentials")
            }
            let answer = await client.send(
                device: delivery.device, payload: Array(delivery.payload.utf8), headers: send.notification.headers)
            return Self.outcome(answer)
        }
    }

    /// What each APNs answer counts as, and what it does to the device (§11.4): 410 and an
    /// unknown token end the channel; the rest are counted.
    static func outcome(_ answer: ProviderAnswer) -> PushOutcome {
        switch answer {
        case .delivered:
            return .delivered
        case .unreachable(let why):
            return .refused(name: "PnsUnreachable", text: "APNs could not be reached: \(why)")
        case .refused(let status, let reason):
            let text = "APNs answered \(status) \(reason)"
            switch (status, reason) {
            case (410, _): return .gone(name: "ExpiredChannel", text: text)
            case (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"): return .gone(name: "BadChannel", text: text)
            case (403, _): return .refused(name: "InvalidCredentials", text: text)
            case (413, _): return .refused(name: "InvalidNotificationSize", text: text)
            case (429, _): return .refused(name: "Throttled", text: text)
            case (503, _): return .refused(name: "PnsUnavailable", text: text)
            case (500..., _): return .refused(name: "PnsServerError", text: text)
            default: return .refused(name: "PnsInterfaceError", text: text)
            }
        }
    }
}
