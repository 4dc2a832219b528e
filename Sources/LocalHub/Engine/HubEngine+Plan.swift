import Foundation
import NotificationHubs

/// One notification planned against the hub's tables: a message for each device it
/// reaches, by push service, and what planning already refused.
public struct DispatchPlan: Sendable {
    /// The notification, started.
    public var notification: StoredNotification
    /// The message for each device, by push service, in target order.
    public var messages: [PushServiceKind: [Delivery]] = [:]
    /// For a test send: the results line of a message (by its service and position).
    var reportLines: [PushServiceKind: [Int: Int]] = [:]
    /// Outcome counts so far, keyed by `OutcomeKey`: what planning refused (no push service, a
    /// payload its service refuses, a channel gone); deliveries are counted when their service
    /// answers.
    public var counts: [String: Int] = [:]
    /// Per-device lines for a test send (at most the test limit); a message's line is
    /// filled in when its service answers.
    public var results: [NotificationOutcome.Result] = []
    /// The outcome of each line of `results` (nil until its service answers).
    var resultNames: [OutcomeName?] = []
    /// What the hub's delivery log keeps of this notification, once numbered and pushed.
    var recorded: [Delivery] = []

    /// Messages in all.
    public var messageCount: Int { messages.values.reduce(0) { $0 + $1.count } }
}

/// How outcome counts are keyed: by name for APNs devices (the built-in service's and Apple's, as
/// stored before other platforms were served), `platform/name` for the others.
public enum OutcomeKey {
    public static func key(_ name: OutcomeName, platform: Platform) -> String {
        platform == .apns ? name.rawValue : "\(platform.rawValue)/\(name.rawValue)"
    }

    /// Whether a stored key counts successes.
    public static func isSuccess(_ key: String) -> Bool { OutcomeName(rawValue: split(key).name) == .success }

    /// The platform and outcome name of a key.
    public static func split(_ key: String) -> (platform: Platform, name: String) {
        guard let slash = key.firstIndex(of: "/"), let platform = Platform(wireValue: String(key[..<slash])) else {
            return (.apns, key)
        }
        return (platform, String(key[key.index(after: slash)...]))
    }

    /// Counts by platform, then name.
    public static func byPlatform(_ counts: [String: Int]) -> [Platform: [String: Int]] {
        var result: [Platform: [String: Int]] = [:]
        for (key, count) in counts {
            let (platform, name) = split(key)
            result[platform, default: [:]][name, default: 0] += count
        }
        return result
    }
}

extension HubEngine {
    /// Plans a notification against the hub's current tables without sending anything.
    public func plan(_ notification: StoredNotification, now: Date = Date()) -> DispatchPlan {
        directory.withLock { directory in
            Self.plan(
                notification, tables: directory[notification.hub], providers: pushServices, now: now, testLimit: testSendLimit)
        }
    }

    /// Which service carries messages of `platform` for `hub`: for APNs, `.apns` means Apple
    /// for every token the terminals did not claim (`PushRoute.service(for:)`).
    static func route(_ platform: Platform, hub: String, providers: [PushServiceKind: any PushService]) -> PushRoute {
        func real(_ kind: PushServiceKind) -> PushServiceKind? { providers[kind]?.serves(hub: hub) == true ? kind : nil }
        switch platform {
        case .apns: return real(.apns) == nil ? .one(.builtIn) : .apple
        case .fcmV1: return real(.fcmV1).map(PushRoute.one) ?? .none
        case .browser: return real(.webPush).map(PushRoute.one) ?? .none
        default: return .none
        }
    }

    enum PushRoute {
        case none
        case one(PushServiceKind)
        /// Apple, except for tokens claimed by terminals.
        case apple

        func service(for device: String, claimedDevices: Set<String>) -> PushServiceKind? {
            switch self {
            case .none: return nil
            case .one(let kind): return kind
            case .apple: return claimedDevices.contains(device) ? .builtIn : .apns
            }
        }
    }

    /// Matches targets through the tag index, renders each distinct template once per send,
    /// has each payload checked by the push service that will carry it, and makes a message
    /// for every device reached; a target whose platform has no push service is `Skipped`,
    /// one whose channel is gone `ExpiredChannel`.
    static func plan(
        _ notification: StoredNotification, tables: HubTables?, providers: [PushServiceKind: any PushService], now: Date,
        testLimit: Int
    ) -> DispatchPlan {
        var n = notification
        n.started = now
        var plan = DispatchPlan(notification: n)
        // Every send keeps its first devices' outcomes, for `explain`; a test send reports them.
        let reportLimit = n.isTest ? testLimit : SendExplanation.lineLimit
        let claimedDevices = tables?.claimedDevices ?? []
        // Messages gather in a bucket for the current service, moved into the plan when the
        // service changes and at the end: no dictionary work per device of a fan-out.
        var bucket: [Delivery] = []
        var bucketKind: PushServiceKind?
        var bucketReports: [Int: Int] = [:]
        func flush() {
            guard let kind = bucketKind, !bucket.isEmpty else { return }
            let offset = plan.messages[kind]?.count ?? 0
            for (m, line) in bucketReports { plan.reportLines[kind, default: [:]][offset + m] = line }
            bucketReports.removeAll()
            if offset == 0 {
                // The usual case, one service: the bucket becomes the plan's list, uncopied.
                plan.messages[kind] = bucket
                bucket = []
            } else {
                plan.messages[kind]! += bucket
                bucket.removeAll(keepingCapacity: true)
            }
        }

        // Registration ids are worked out only for the results a test send reports.
        func deliver(
            _ kind: PushServiceKind, platform: Platform, device: String, template: String, payload: String,
            registrationId: @autoclosure () -> String, handle: String, keys: WebPushKeys?
        ) {
            if bucketKind != kind {
                flush()
                bucketKind = kind
            }
            if plan.results.count < reportLimit {
                bucketReports[bucket.count] = plan.results.count
                plan.resultNames.append(nil)
                plan.results.append(
                    .init(
                        applicationPlatform: platform.nativeFormat.rawValue, pnsHandle: handle,
                        registrationId: registrationId(), outcome: ""))
            }
            bucket.append(
                Delivery(
                    seq: 0, hub: n.hub, device: device, notificationId: n.id, template: template, payload: payload,
                    delivered: now, tags: n.tagExpression, webPushKeys: keys))
        }
        func refuse(
            _ outcomeName: OutcomeName, text: String, platform: Platform, registrationId: @autoclosure () -> String,
            handle: String
        ) {
            plan.counts[OutcomeKey.key(outcomeName, platform: platform), default: 0] += 1
            if plan.results.count < reportLimit {
                plan.resultNames.append(outcomeName)
                plan.results.append(
                    .init(
                        applicationPlatform: platform.nativeFormat.rawValue, pnsHandle: handle, registrationId: registrationId(),
                        outcome: text))
            }
        }
        func unserved(_ platform: Platform) -> (name: OutcomeName, text: String) {
            (.skipped, "The local hub has no push service for \(platform) in this hub")
        }

        if let handles = n.batchHandles ?? n.directHandle.map({ [$0] }) {
            // Direct sends: one handle, or a batch's; the payload checked once.
            let platform = n.format.platform ?? .apns
            let keys = n.webPushKeys
            let route = Self.route(platform, hub: n.hub, providers: providers)
            let compact = (try? JSONValue(parsing: n.body))?.text ?? n.body
            var checks: [PushServiceKind: PushOutcome?] = [:]
            for handle in handles {
                let device = TagIndex.device(handle, platform: platform)
                guard let kind = route.service(for: device, claimedDevices: claimedDevices), let provider = providers[kind],
                    platform != .browser || keys != nil
                else {
                    let (name, text): (OutcomeName, String) =
                        platform == .browser && keys == nil
                        ? (.badChannel, "A direct send to a browser needs its P256DH and Auth headers") : unserved(platform)
                    refuse(name, text: text, platform: platform, registrationId: "", handle: handle)
                    continue
                }
                let refusal = checks[kind] ?? provider.check(Array(n.body.utf8))
                checks[kind] = .some(refusal)
                if case .refused(let name, let text)? = refusal {
                    refuse(name, text: text, platform: platform, registrationId: "", handle: handle)
                } else {
                    deliver(
                        kind, platform: platform, device: device, template: "", payload: compact, registrationId: "",
                        handle: handle, keys: keys)
                }
            }
        } else if let tables {
            let expression = n.tagExpression.flatMap { try? TagExpression(parsing: $0) }
            let isTemplate = n.format == .template
            var slots = Array(tables.index.resolve(expression, templates: isTemplate))
            if !isTemplate {
                let platform = n.format.platform
                slots.removeAll { tables.index.target($0).platform != platform }
            }
            if n.isTest, slots.count > testLimit {
                slots.shuffle()
                slots.removeLast(slots.count - testLimit)
            }
            let properties = isTemplate ? (try? JSONValue(parsing: n.body)).flatMap { try? TemplateProperties(json: $0) } : nil
            var rendered = RenderCache(numberLimit: isTemplate ? tables.index.templateNumberLimit : 0, targets: slots.count)
            // Deliveries carry compact JSON: a payload is one line of a stream frame.
            let nativePayload = isTemplate ? "" : ((try? JSONValue(parsing: n.body))?.text ?? n.body)
            var nativeChecks: [PushServiceKind: PushOutcome?] = [:]
            bucket.reserveCapacity(slots.count)
            // The route of the platform of the targets at hand, worked out when it changes.
            var routedPlatform: Platform?
            var route = PushRoute.none
            for slot in slots {
                let target = tables.index.target(slot)
                if routedPlatform != target.platform {
                    routedPlatform = target.platform
                    route = Self.route(target.platform, hub: n.hub, providers: providers)
                }
                guard let kind = route.service(for: target.device, claimedDevices: claimedDevices), let service = providers[kind]
                else {
                    let (name, text) = unserved(target.platform)
                    refuse(
                        name, text: text, platform: target.platform, registrationId: target.registrationId,
                        handle: target.device)
                    continue
                }
                if target.expired, kind != .builtIn {
                    refuse(
                        .expiredChannel, text: "The device's push channel expired; it gets nothing until it registers again",
                        platform: target.platform, registrationId: target.registrationId, handle: target.device)
                    continue
                }
                let payload: String
                let refusal: PushOutcome?
                if isTemplate {
                    let number = Int(target.templateNumber)
                    if let cached = rendered[number], cached.kind == kind {
                        (payload, refusal) = (cached.payload, cached.refusal)
                    } else if let template = target.template, let properties {
                        let bytes = template.render(properties)
                        let entry = (payload: String(decoding: bytes, as: UTF8.self), refusal: service.check(bytes), kind: kind)
                        rendered[number] = entry
                        (payload, refusal) = (entry.payload, entry.refusal)
                    } else {
                        let invalid = APNsPayloadRules.invalid
                        (payload, refusal) = ("", .refused(name: invalid.outcomeName, text: invalid.outcomeText))
                    }
                } else {
                    payload = nativePayload
                    if let checked = nativeChecks[kind] {
                        refusal = checked
                    } else {
                        refusal = service.check(Array(n.body.utf8))
                        nativeChecks[kind] = .some(refusal)
                    }
                }
                if case .refused(let name, let text)? = refusal {
                    refuse(
                        name, text: text, platform: target.platform, registrationId: target.registrationId, handle: target.device)
                } else {
                    deliver(
                        kind, platform: target.platform, device: target.device, template: target.templateName ?? "",
                        payload: payload, registrationId: target.registrationId, handle: target.device, keys: target.webPushKeys)
                }
            }
        }
        flush()
        return plan
    }
}

/// Each distinct template's rendering of one send, by template number: an array when the
/// numbers are few for the targets reached, a dictionary when a hub holds many bodies and the
/// send reaches few of them (an array would cost every send the size of the whole hub).
struct RenderCache {
    typealias Entry = (payload: String, refusal: PushOutcome?, kind: PushServiceKind)
    private var dense: [Entry?] = []
    private var sparse: [Int: Entry] = [:]
    private let useDense: Bool

    init(numberLimit: Int, targets: Int) {
        useDense = numberLimit <= max(4096, 4 * targets)
        if useDense { dense = Array(repeating: nil, count: numberLimit) }
    }

    subscript(number: Int) -> Entry? {
        get { useDense ? dense[number] : sparse[number] }
        set {
            if useDense { dense[number] = newValue } else { sparse[number] = newValue }
        }
    }
}
