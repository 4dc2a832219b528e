import Foundation
import NotificationHubs

/// Plans notifications against a hub's tables, without sending anything: matches targets
/// through the tag index (or takes a direct send's handles), renders each distinct template
/// once per send, has each payload checked by the push service that will carry it, and makes
/// a message for every device reached; a target whose platform has no push service is
/// `Skipped`, one whose channel is gone `ExpiredChannel`. Pure: the tables and services in,
/// a plan out.
struct DispatchPlanner {
    let services: [PushServiceKind: any PushService]
    /// At most this many devices are reached by a test send, as on the service.
    let testLimit: Int

    func plan(_ notification: StoredNotification, tables: HubTables?, now: Date) -> DispatchPlan {
        var n = notification
        n.started = now
        // Every send keeps its first devices' outcomes, for `explain`; a test send reports them.
        var builder = PlanBuilder(
            plan: DispatchPlan(notification: n), reportLimit: n.isTest ? testLimit : SendExplanation.lineLimit, now: now)
        let claimed = tables?.claimedDevices ?? []
        if let handles = n.batchHandles ?? n.directHandle.map({ [$0] }) {
            planDirect(n, handles: handles, claimed: claimed, into: &builder)
        } else if let tables {
            planTagged(n, tables: tables, into: &builder)
        }
        return builder.finished()
    }

    /// Direct sends: one handle, or a batch's; the payload checked once per service.
    private func planDirect(_ n: StoredNotification, handles: [String], claimed: Set<String>, into builder: inout PlanBuilder) {
        let platform = n.format.platform ?? .apns
        let keys = n.webPushKeys
        let route = Self.route(platform, hub: n.hub, services: services)
        let compact = (try? JSONValue(parsing: n.body))?.text ?? n.body
        var checks: [PushServiceKind: PushOutcome?] = [:]
        for handle in handles {
            let device = TagIndex.device(handle, platform: platform)
            guard let kind = route.service(for: device, claimedDevices: claimed), let service = services[kind],
                platform != .browser || keys != nil
            else {
                let (name, text): (OutcomeName, String) =
                    platform == .browser && keys == nil
                    ? (.badChannel, "A direct send to a browser needs its P256DH and Auth headers") : Self.unserved(platform)
                builder.refuse(name, text: text, platform: platform, registrationId: "", handle: handle)
                continue
            }
            let refusal = checks[kind] ?? service.check(Array(n.body.utf8))
            checks[kind] = .some(refusal)
            if case .refused(let name, let text)? = refusal {
                builder.refuse(name, text: text, platform: platform, registrationId: "", handle: handle)
            } else {
                builder.deliver(
                    kind, n, platform: platform, device: device, template: "", payload: compact, registrationId: "",
                    handle: handle, keys: keys)
            }
        }
    }

    /// Sends to a tag expression (or everyone): the targets the index resolves, each rendered.
    private func planTagged(_ n: StoredNotification, tables: HubTables, into builder: inout PlanBuilder) {
        let isTemplate = n.format == .template
        let expression: TagExpression?
        if let text = n.tagExpression {
            // A stored expression that does not read (a row changed by hand) reaches no one,
            // never everyone.
            guard let parsed = try? TagExpression(parsing: text) else { return }
            expression = parsed
        } else {
            expression = nil
        }
        var slots = Array(tables.index.resolve(expression, templates: isTemplate))
        if !isTemplate { slots.removeAll { tables.index.target($0).platform != n.format.platform } }
        if n.isTest, slots.count > testLimit {
            slots.shuffle()
            slots.removeLast(slots.count - testLimit)
        }
        var payloads = Payloads(n, tables: tables, targets: slots.count)
        // What this send rendered for each installation or registration, against its bound.
        var rendered: [String: Int] = [:]
        builder.reserve(slots.count)
        // The route of the platform of the targets at hand, worked out when it changes.
        var routedPlatform: Platform?
        var route = PushRoute.none
        for slot in slots {
            let target = tables.index.target(slot)
            if routedPlatform != target.platform {
                routedPlatform = target.platform
                route = Self.route(target.platform, hub: n.hub, services: services)
            }
            guard let kind = route.service(for: target.device, claimedDevices: tables.claimedDevices),
                let service = services[kind]
            else {
                let (name, text) = Self.unserved(target.platform)
                builder.refuse(
                    name, text: text, platform: target.platform, registrationId: target.registrationId, handle: target.device)
                continue
            }
            if target.expires <= builder.now.timeIntervalSince1970 {
                builder.refuse(
                    .skipped, text: Self.expiredText(target.expires), platform: target.platform,
                    registrationId: target.registrationId, handle: target.device)
                continue
            }
            if target.expired, kind != .builtIn {
                builder.refuse(
                    .expiredChannel, text: "The device's push channel expired; it gets nothing until it registers again",
                    platform: target.platform, registrationId: target.registrationId, handle: target.device)
                continue
            }
            let (payload, refusal) = payloads.payload(for: target, kind: kind, service: service)
            if case .refused(let name, let text)? = refusal {
                builder.refuse(
                    name, text: text, platform: target.platform, registrationId: target.registrationId, handle: target.device)
            } else {
                deliver(kind, n, target, payload, rendered: &rendered, into: &builder)
            }
        }
    }

    /// Delivers `payload` to `target`, or counts it `Dropped` once what the send rendered for
    /// its installation would pass `renderedBytesPerOwner` (counted only for installations of
    /// more templates than fit it at the largest payload: a registration renders once).
    private func deliver(
        _ kind: PushServiceKind, _ n: StoredNotification, _ target: DeliveryTarget, _ payload: String,
        rendered: inout [String: Int], into builder: inout PlanBuilder
    ) {
        if target.manyTemplates {
            let total = (rendered[target.owner] ?? 0) + payload.utf8.count
            if rendered[target.owner] != nil, total > Self.renderedBytesPerOwner {
                builder.refuse(
                    .dropped,
                    text:
                        "Dropped: this send's renderings for one installation or registration passed \(Self.renderedBytesPerOwner / 1024) KB (\(total) bytes with this template's)",
                    platform: target.platform, registrationId: target.registrationId, handle: target.device)
                return
            }
            rendered[target.owner] = total
        }
        builder.deliver(
            kind, n, platform: target.platform, device: target.device, template: target.templateName ?? "",
            payload: payload, registrationId: target.registrationId, handle: target.device, keys: target.webPushKeys)
    }

    /// The most one send renders for one installation or registration, all its templates
    /// together: past it the rest count `Dropped`, so that templates that expand a short
    /// message cannot spend the delivery log (and the services) for everyone.
    static let renderedBytesPerOwner = 16 * 1024

    /// Why an expired installation or registration got nothing.
    static func expiredText(_ expires: Double) -> String {
        "\(expiredPrefix) \(W3CDate.format(Date(timeIntervalSince1970: expires))); it gets nothing until it registers again"
    }
    static let expiredPrefix = "The installation or registration expired at"

    static func unserved(_ platform: Platform) -> (name: OutcomeName, text: String) {
        (.skipped, "The local hub has no push service for \(platform) in this hub")
    }

    /// Which service carries messages of `platform` for `hub`: for APNs, `.apns` means Apple
    /// for every token the terminals did not claim (`PushRoute.service(for:)`).
    static func route(_ platform: Platform, hub: String, services: [PushServiceKind: any PushService]) -> PushRoute {
        func external(_ kind: PushServiceKind) -> PushServiceKind? { services[kind]?.serves(hub: hub) == true ? kind : nil }
        switch platform {
        case .apns: return external(.apns) == nil ? .one(.builtIn) : .apple
        case .fcmV1: return external(.fcmV1).map(PushRoute.one) ?? .none
        case .browser: return external(.webPush).map(PushRoute.one) ?? .none
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
}

/// Each target's payload for one send: a template rendered once per distinct template and
/// service, a native body once; each checked by the service that will carry it.
private struct Payloads {
    private let isTemplate: Bool
    private let properties: TemplateProperties?
    private let body: String
    /// Deliveries carry compact JSON: a payload is one line of a stream frame.
    private let nativePayload: String
    private var rendered: RenderCache
    private var nativeChecks: [PushServiceKind: PushOutcome?] = [:]

    init(_ n: StoredNotification, tables: HubTables, targets: Int) {
        isTemplate = n.format == .template
        properties = isTemplate ? (try? JSONValue(parsing: n.body)).flatMap { try? TemplateProperties(json: $0) } : nil
        body = n.body
        nativePayload = isTemplate ? "" : ((try? JSONValue(parsing: n.body))?.text ?? n.body)
        rendered = RenderCache(numberLimit: isTemplate ? tables.index.templateNumberLimit : 0, targets: targets)
    }

    mutating func payload(for target: DeliveryTarget, kind: PushServiceKind, service: any PushService) -> (
        String, PushOutcome?
    ) {
        guard isTemplate else {
            if let checked = nativeChecks[kind] { return (nativePayload, checked) }
            let refusal = service.check(Array(body.utf8))
            nativeChecks[kind] = .some(refusal)
            return (nativePayload, refusal)
        }
        let number = Int(target.templateNumber)
        if let cached = rendered[number], cached.kind == kind { return (cached.payload, cached.refusal) }
        guard let template = target.template, let properties else {
            let invalid = APNsPayloadRules.invalid
            return ("", .refused(name: invalid.outcomeName, text: invalid.outcomeText))
        }
        let bytes = template.render(properties)
        let entry = (payload: String(decoding: bytes, as: UTF8.self), refusal: service.check(bytes), kind: kind)
        rendered[number] = entry
        return (entry.payload, entry.refusal)
    }
}

/// A plan being built: messages gather in a bucket for the current service, moved into the
/// plan when the service changes and at the end (no dictionary work per device of a fan-out),
/// and the first devices' results for the report.
private struct PlanBuilder {
    var plan: DispatchPlan
    let reportLimit: Int
    let now: Date
    private var bucket: [Delivery] = []
    private var bucketKind: PushServiceKind?
    private var bucketReports: [Int: Int] = [:]

    init(plan: DispatchPlan, reportLimit: Int, now: Date) {
        self.plan = plan
        self.reportLimit = reportLimit
        self.now = now
    }

    mutating func reserve(_ count: Int) { bucket.reserveCapacity(count) }

    /// A message for a device; registration ids are worked out only for the results reported.
    mutating func deliver(
        _ kind: PushServiceKind, _ n: StoredNotification, platform: Platform, device: String, template: String,
        payload: String, registrationId: @autoclosure () -> String, handle: String, keys: WebPushKeys?
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
                    applicationPlatform: platform.nativeFormat.rawValue, pnsHandle: handle, registrationId: registrationId(),
                    outcome: ""))
        }
        bucket.append(
            Delivery(
                seq: 0, hub: n.hub, device: device, notificationId: n.id, template: template, payload: payload,
                delivered: now, tags: n.tagExpression, webPushKeys: keys))
    }

    mutating func refuse(
        _ name: OutcomeName, text: String, platform: Platform, registrationId: @autoclosure () -> String, handle: String
    ) {
        plan.counts[OutcomeKey.key(name, platform: platform), default: 0] += 1
        guard plan.results.count < reportLimit else { return }
        plan.resultNames.append(name)
        plan.results.append(
            .init(
                applicationPlatform: platform.nativeFormat.rawValue, pnsHandle: handle, registrationId: registrationId(),
                outcome: text))
    }

    private mutating func flush() {
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

    mutating func finished() -> DispatchPlan {
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
