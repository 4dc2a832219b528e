import NotificationHubs

/// What the hub needs of a real push service's client (`APNsClient`, `FCMv1Client`,
/// `WebPushClient`): one try of one message, and how its messages are laned and retried
/// (`ProviderFanOut`).
protocol ProviderClient: Sendable {
    func attempt(_ delivery: Delivery, headers: [String: String]) async -> ProviderTry
    var fanOut: ProviderFanOut.Policy { get }
    func shutdown() async
}

extension APNsClient: ProviderClient {
    func attempt(_ delivery: Delivery, headers: [String: String]) async -> ProviderTry {
        await attempt(device: delivery.device, payload: Array(delivery.payload.utf8), headers: headers)
    }

    /// One lane, `maximumStreams` wide: the operator's one endpoint.
    var fanOut: ProviderFanOut.Policy {
        let (backoff, limit) = (self.backoff, retries)
        return .single(width: maximumStreams) { ProviderRetries(backoff: backoff, limit: limit) }
    }
}

extension FCMv1Client: ProviderClient {
    func attempt(_ delivery: Delivery, headers: [String: String]) async -> ProviderTry {
        await attempt(device: delivery.device, payload: Array(delivery.payload.utf8), headers: headers)
    }

    /// One lane, `maximumConcurrent` wide: the operator's one endpoint.
    var fanOut: ProviderFanOut.Policy {
        let (backoff, limit) = (self.backoff, retries)
        return .single(width: maximumConcurrent) { ProviderRetries(backoff: backoff, limit: limit) }
    }
}

extension WebPushClient: ProviderClient {
    func attempt(_ delivery: Delivery, headers: [String: String]) async -> ProviderTry {
        guard let keys = delivery.webPushKeys else { return .final(.refused(status: 400, reason: "BadP256dh")) }
        return await attempt(
            endpoint: delivery.device, p256dh: keys.p256dh, auth: keys.auth, payload: Array(delivery.payload.utf8),
            headers: headers)
    }

    /// A lane per origin, `perOrigin` wide.
    var fanOut: ProviderFanOut.Policy {
        let (backoff, limit) = (self.backoff, retries)
        return ProviderFanOut.Policy(
            laneWidth: perOrigin, lane: { _, delivery in Self.lane(of: delivery.device) },
            retries: { ProviderRetries(backoff: backoff, limit: limit) })
    }
}

/// How one real service's answers count (wire spec §11.4 for APNs): which end the device's
/// channel, and what payloads it can never take.
struct ProviderRules: Sendable {
    /// The service as messages name it.
    let name: String
    /// The outcome (`ExpiredChannel`, `BadChannel`) of an answer that ends the channel, or nil.
    let gone: @Sendable (_ status: Int, _ reason: String) -> String?
    let check: @Sendable ([UInt8]) -> PushOutcome?

    static let apns = ProviderRules(
        name: "APNs",
        gone: { status, reason in
            if status == 410 { return "ExpiredChannel" }
            return status == 400 && ["BadDeviceToken", "DeviceTokenNotForTopic"].contains(reason) ? "BadChannel" : nil
        },
        check: { payload in APNsPayloadRules.check(payload).map { .refused(name: $0.outcomeName, text: $0.outcomeText) } })

    /// Only FCM's own word ends a channel: a bare 404 is as likely a wrong project id in the
    /// credentials, which must not expire every Android installation. INVALID_ARGUMENT may be
    /// the message's fault as much as the token's, so it is only counted.
    static let fcmV1 = ProviderRules(
        name: "FCM",
        gone: { _, reason in
            reason == "UNREGISTERED" ? "ExpiredChannel" : reason == "SENDER_ID_MISMATCH" ? "BadChannel" : nil
        },
        check: { payload in
            FCMv1Client.check(payload).map {
                .refused(
                    name: payload.count > FCMv1Client.maximumPayloadBytes ? "InvalidNotificationSize" : "InvalidPayload",
                    text: "The FCM v1 message cannot be sent: \($0)")
            }
        })

    /// A subscription the service no longer knows (404, 410), or one the hub cannot write to
    /// (its endpoint or keys are not usable: refused before any request), ends the channel.
    static let webPush = ProviderRules(
        name: "Web Push",
        gone: { status, reason in
            if status == 404 || status == 410 { return "ExpiredChannel" }
            return status == 400 && ["BadEndpoint", "BadP256dh", "BadAuth", "PrivateAddress"].contains(reason)
                ? "BadChannel" : nil
        },
        check: { payload in
            WebPushClient.check(payload).map {
                .refused(name: "InvalidNotificationSize", text: "The payload is too large: \($0)")
            }
        })
}

/// A real push service for the hubs that have credentials for it: each message one request
/// on the hub's client (many at once), each answer an outcome by the service's rules and the
/// statuses every service shares.
final class ProviderPushService: PushService {
    let kind: PushServiceKind
    let platform: Platform
    let rules: ProviderRules
    /// By lower-cased hub name.
    private let clients: [String: any ProviderClient]

    var keepsDeliveryLog: Bool { false }

    init(_ kind: PushServiceKind, platform: Platform, rules: ProviderRules, clients: [String: any ProviderClient]) {
        self.kind = kind
        self.platform = platform
        self.rules = rules
        self.clients = clients
    }

    func serves(hub: String) -> Bool { clients[hub.lowercased()] != nil }

    func check(_ payload: [UInt8]) -> PushOutcome? { rules.check(payload) }

    func push(_ sends: [PushSend]) async -> [[PushOutcome]] {
        // Each hub's client has its own limits and lanes; hubs go at once.
        var outcomes: [[PushOutcome]] = sends.map { Array(repeating: .delivered, count: $0.deliveries.count) }
        let byHub = Dictionary(grouping: sends.indices) { sends[$0].notification.hub.lowercased() }
        await withTaskGroup(of: ([Int], [[PushOutcome]]).self) { group in
            for (hub, indices) in byHub {
                guard let client = clients[hub] else {
                    let refusal = PushOutcome.refused(name: "PnsUnavailable", text: "The hub has no \(rules.name) credentials")
                    for s in indices { outcomes[s] = Array(repeating: refusal, count: sends[s].deliveries.count) }
                    continue
                }
                let hubSends = indices.map { sends[$0] }
                group.addTask {
                    let answers = await ProviderFanOut.push(hubSends, policy: client.fanOut) { send, delivery in
                        await client.attempt(delivery, headers: send.notification.headers)
                    }
                    return (indices, answers.map { $0.map(self.outcome) })
                }
            }
            for await (indices, hubOutcomes) in group {
                for (k, s) in indices.enumerated() { outcomes[s] = hubOutcomes[k] }
            }
        }
        return outcomes
    }

    func outcome(_ answer: ProviderAnswer) -> PushOutcome {
        switch answer {
        case .delivered:
            return .delivered
        case .unreachable(let why):
            return .refused(name: "PnsUnreachable", text: "\(rules.name) could not be reached: \(why)")
        case .refused(let status, let reason):
            let text = "\(rules.name) answered \(status) \(reason)"
            if let gone = rules.gone(status, reason) { return .gone(name: gone, text: text) }
            switch status {
            case 401, 403: return .refused(name: "InvalidCredentials", text: text)
            case 413: return .refused(name: "InvalidNotificationSize", text: text)
            case 429: return .refused(name: "Throttled", text: text)
            case 503: return .refused(name: "PnsUnavailable", text: text)
            case 500...: return .refused(name: "PnsServerError", text: text)
            default: return .refused(name: "PnsInterfaceError", text: text)
            }
        }
    }
}
