import NotificationHubs

/// FCM v1 for the hubs that have a service account: each `fcmv1` installation's message
/// sent on the hub's `FCMv1Client`, the answer mapped to the service's outcome names.
final class FCMv1PushService: PushService {
    /// By lower-cased hub name.
    private let clients: [String: FCMv1Client]

    var kind: PushServiceKind { .fcmV1 }
    var platform: Platform { .fcmV1 }
    var keepsDeliveryLog: Bool { false }

    init(clients: [String: FCMv1Client]) {
        self.clients = clients
    }

    func serves(hub: String) -> Bool { clients[hub.lowercased()] != nil }

    func check(_ payload: [UInt8]) -> PushOutcome? {
        FCMv1Client.check(payload).map {
            .refused(
                name: payload.count > FCMv1Client.maximumPayloadBytes ? "InvalidNotificationSize" : "InvalidPayload",
                text: "The FCM v1 message cannot be sent: \($0)")
        }
    }

    func push(_ sends: [PushSend]) async -> [[PushOutcome]] {
        await ProviderFanOut.push(sends) { send, delivery in
            guard let client = self.clients[send.notification.hub.lowercased()] else {
                return .refused(name: "PnsUnavailable", text: "The hub has no FCM v1 service account")
            }
            let answer = await client.send(
                device: delivery.device, payload: Array(delivery.payload.utf8), headers: send.notification.headers)
            return Self.outcome(answer)
        }
    }

    /// What each answer counts as: an app that is gone (UNREGISTERED) ends the channel,
    /// and so does a token of another sender (SENDER_ID_MISMATCH); INVALID_ARGUMENT may be
    /// the message's fault as much as the token's, so it is only counted.
    static func outcome(_ answer: ProviderAnswer) -> PushOutcome {
        switch answer {
        case .delivered:
            return .delivered
        case .unreachable(let why):
            return .refused(name: "PnsUnreachable", text: "FCM could not be reached: \(why)")
        case .refused(let status, let reason):
            let text = "FCM answered \(status) \(reason)"
            switch (status, reason) {
            // Only FCM's own word: a bare 404 is as likely a wrong project id in the
            // credentials, which must not expire every Android installation.
            case (_, "UNREGISTERED"): return .gone(name: "ExpiredChannel", text: text)
            case (_, "SENDER_ID_MISMATCH"): return .gone(name: "BadChannel", text: text)
            case (401, _), (403, _): return .refused(name: "InvalidCredentials", text: text)
            case (429, _): return .refused(name: "Throttled", text: text)
            case (503, _): return .refused(name: "PnsUnavailable", text: text)
            case (500..., _): return .refused(name: "PnsServerError", text: text)
            default: return .refused(name: "PnsInterfaceError", text: text)
            }
        }
    }
}
