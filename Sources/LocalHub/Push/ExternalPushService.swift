import NotificationHubs

/// What the hub needs of a real push service's client (`APNsClient`, `FCMv1Client`,
/// `WebPushClient`): one try of one message, and how its messages are laned and retried
/// (`PushFanOut`).
protocol PushClient: Sendable {
    func attempt(_ delivery: Delivery, headers: [String: String]) async -> PushAttempt
    var fanOut: PushFanOut.Policy { get }
    func shutdown() async
}

/// A client of a service at one endpoint the operator configured (APNs, FCM), which names a
/// device by its token: one lane, `maximumInFlight` wide.
protocol TokenPushClient: PushClient {
    func attempt(device: String, payload: [UInt8], headers: [String: String]) async -> PushAttempt
    var maximumInFlight: Int { get }
    var backoff: Backoff { get }
    var retries: Int { get }
}

extension TokenPushClient {
    func attempt(_ delivery: Delivery, headers: [String: String]) async -> PushAttempt {
        await attempt(device: delivery.device, payload: Array(delivery.payload.utf8), headers: headers)
    }

    var fanOut: PushFanOut.Policy {
        let (backoff, limit) = (self.backoff, retries)
        return .single(width: maximumInFlight) { PushRetries(backoff: backoff, limit: limit) }
    }
}

extension APNsClient: TokenPushClient {
    var maximumInFlight: Int { maximumStreams }
}

extension FCMv1Client: TokenPushClient {
    var maximumInFlight: Int { maximumConcurrent }
}

extension WebPushClient: PushClient {
    func attempt(_ delivery: Delivery, headers: [String: String]) async -> PushAttempt {
        guard let keys = delivery.webPushKeys else { return .final(.refused(status: 400, reason: "BadP256dh")) }
        return await attempt(
            endpoint: delivery.device, p256dh: keys.p256dh, auth: keys.auth, payload: Array(delivery.payload.utf8),
            headers: headers)
    }

    /// A lane per origin, `perOrigin` wide.
    var fanOut: PushFanOut.Policy {
        let (backoff, limit) = (self.backoff, retries)
        return PushFanOut.Policy(
            laneWidth: perOrigin, lane: { _, delivery in Self.lane(of: delivery.device) },
            retries: { PushRetries(backoff: backoff, limit: limit) })
    }
}

/// How one real service's answers count (wire spec §11.4 for APNs): which end the device's
/// channel, and what payloads it can never take.
struct PushServiceRules: Sendable {
    /// The service as messages name it.
    let name: String
    /// The outcome (`ExpiredChannel`, `BadChannel`) of an answer that ends the channel, or nil.
    let gone: @Sendable (_ status: Int, _ reason: String) -> OutcomeName?
    let check: @Sendable ([UInt8]) -> PushOutcome?

    static let apns = PushServiceRules(
        name: "APNs",
        gone: { status, reason in
            if status == 410 { return .expiredChannel }
            return status == 400 && ["BadDeviceToken", "DeviceTokenNotForTopic"].contains(reason) ? .badChannel : nil
        },
        check: { payload in APNsPayloadRules.check(payload).map { .refused(name: $0.outcomeName, text: $0.outcomeText) } })

    /// Only FCM's own word ends a channel: a bare 404 is as likely a wrong project id in the
    /// credentials, which must not expire every Android installation. INVALID_ARGUMENT may be
    /// the message's fault as much as the token's, so it is only counted.
    static let fcmV1 = PushServiceRules(
        name: "FCM",
        gone: { _, reason in
            reason == "UNREGISTERED" ? .expiredChannel : reason == "SENDER_ID_MISMATCH" ? .badChannel : nil
        },
        check: { payload in
            FCMv1Client.check(payload).map {
                .refused(
                    name: payload.count > FCMv1Client.maximumPayloadBytes ? .invalidNotificationSize : .invalidPayload,
                    text: "The FCM v1 message cannot be sent: \($0)")
            }
        })

    /// A subscription the service no longer knows (404, 410), or one the hub cannot write to
    /// (its endpoint or keys are not usable: refused before any request), ends the channel.
    /// An endpoint whose address is private is only unreachable (`WebPushClient`).
    static let webPush = PushServiceRules(
        name: "Web Push",
        gone: { status, reason in
            if status == 404 || status == 410 { return .expiredChannel }
            return status == 400 && ["BadEndpoint", "BadP256dh", "BadAuth"].contains(reason)
                ? .badChannel : nil
        },
        check: { payload in
            WebPushClient.check(payload).map {
                .refused(name: .invalidNotificationSize, text: "The payload is too large: \($0)")
            }
        })
}

/// A real push service for the hubs that have credentials for it: each message one request
/// on the hub's client (many at once), each answer an outcome by the service's rules and the
/// statuses every service shares.
final class ExternalPushService: PushService {
    let kind: PushServiceKind
    let platform: Platform
    let rules: PushServiceRules
    /// By lower-cased hub name.
    private let clients: [String: any PushClient]

    var keepsDeliveryLog: Bool { false }

    init(_ kind: PushServiceKind, platform: Platform, rules: PushServiceRules, clients: [String: any PushClient]) {
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
                    let refusal = PushOutcome.refused(name: .pnsUnavailable, text: "The hub has no \(rules.name) credentials")
                    for s in indices { outcomes[s] = Array(repeating: refusal, count: sends[s].deliveries.count) }
                    continue
                }
                let hubSends = indices.map { sends[$0] }
                group.addTask {
                    let answers = await PushFanOut.push(hubSends, policy: client.fanOut) { send, delivery in
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

    func outcome(_ answer: PushAnswer) -> PushOutcome {
        switch answer {
        case .delivered:
            return .delivered
        case .unreachable(let why):
            return .refused(name: .pnsUnreachable, text: "\(rules.name) could not be reached: \(why)")
        case .refused(let status, let reason):
            let text = "\(rules.name) answered \(status) \(reason)"
            if let gone = rules.gone(status, reason) { return .gone(name: gone, text: text) }
            switch status {
            case 401, 403: return .refused(name: .invalidCredentials, text: text)
            case 413: return .refused(name: .invalidNotificationSize, text: text)
            case 429: return .refused(name: .throttled, text: text)
            case 503: return .refused(name: .pnsUnavailable, text: text)
            case 500...: return .refused(name: .pnsServerError, text: text)
            default: return .refused(name: .pnsInterfaceError, text: text)
            }
        }
    }
}
