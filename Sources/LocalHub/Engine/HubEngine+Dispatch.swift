import Foundation
import NotificationHubs

/// One notification planned against the hub's tables: a message for each device it
/// reaches, by push service, and what planning already refused.
public struct DispatchPlan: Sendable {
    /// The notification, started.
    public var notification: StoredNotification
    /// The message for each device, by push service, in target order.
    public var messages: [Platform: [Delivery]] = [:]
    /// For a test send: the results line of a message (by its service and position).
    var reportLines: [Platform: [Int: Int]] = [:]
    /// Outcome counts so far: what planning refused (no push service, a payload its service
    /// refuses); deliveries are counted when their service answers.
    public var counts: [String: Int] = [:]
    /// Per-device lines for a test send (at most the test limit); a message's line is
    /// filled in when its service answers.
    public var results: [NotificationOutcome.Result] = []
    /// What the hub's delivery log keeps of this notification, once numbered and pushed.
    var recorded: [Delivery] = []

    /// Messages in all.
    public var messageCount: Int { messages.values.reduce(0) { $0 + $1.count } }
}

extension HubEngine {
    func runDispatcher() async {
        for await _ in dispatches.wakeups {
            while true {
                let jobs = dispatches.take(limit: 256)
                if jobs.isEmpty { break }
                await dispatch(jobs)
            }
        }
    }

    /// Plans a batch, numbers what the delivery log keeps, hands every message to its push
    /// service (the sandbox's streams see them at once), then writes every delivery and final
    /// state in one commit. A failed commit is retried: nothing is half-recorded, and a crash
    /// before the commit leaves the notifications undispatched, so they are dispatched again
    /// at restart (receivers dedupe).
    private func dispatch(_ jobs: [DispatchJob]) async {
        let now = Date()
        var plans = directory.withLock { directory in
            jobs.map {
                Self.plan(
                    $0.notification, tables: directory[$0.notification.hub], providers: pushServices, now: now,
                    testLimit: testSendLimit)
            }
        }
        guard await number(&plans) else { return }
        // What services that keep the delivery log were handed: published to live streams
        // before the commit, so all of it is marked recorded after, delivered or not.
        var published: [Delivery] = []
        for provider in pushOrder { published += await push(&plans, through: provider) }
        let records = plans.map { plan -> DispatchRecord in
            var n = plan.notification
            n.ended = Date()
            n.outcomeCounts = plan.counts
            n.state = plan.counts.isEmpty ? .noTargetFound : .completed
            return DispatchRecord(notification: n, deliveries: plan.recorded)
        }
        var backoff = Self.storeBackoff
        while true {
            do {
                _ = try await store.record(records)
                break
            } catch {
                logger.error("recording \(records.count) dispatches failed, retrying: \(error)")
                try? await Task.sleep(nanoseconds: UInt64(backoff.fail() * 1_000_000_000))
                if Task.isCancelled { return }
            }
        }
        streams.markRecorded(published)
        for (job, (plan, record)) in zip(jobs, zip(plans, records)) {
            metrics.deliveries(record.notification.outcomeCounts)
            let success = plan.counts["Success"] ?? 0
            job.outcome?.fulfil(
                NotificationOutcome(
                    success: success, failure: plan.counts.values.reduce(0, +) - success, results: plan.results))
        }
    }

    /// Hands one service the messages of every plan at once (in numbering order) and counts
    /// what it answers; returns what it was handed when it keeps the delivery log.
    private func push(_ plans: inout [DispatchPlan], through provider: any PushService) async -> [Delivery] {
        let platform = provider.platform
        var sends: [PushSend] = []
        var owners: [Int] = []
        for p in plans.indices {
            guard let deliveries = plans[p].messages[platform] else { continue }
            sends.append(PushSend(notification: plans[p].notification, deliveries: deliveries))
            owners.append(p)
        }
        guard !sends.isEmpty else { return [] }
        let answers = await provider.push(sends)
        for (k, send) in sends.enumerated() {
            let p = owners[k]
            let outcomes = k < answers.count ? answers[k] : []
            let reportLines = plans[p].reportLines[platform]
            // The usual answer, every message delivered, is counted and recorded in bulk.
            if outcomes.count == send.deliveries.count, reportLines == nil, outcomes.allSatisfy({ $0 == .delivered }) {
                plans[p].counts["Success", default: 0] += outcomes.count
                if provider.keepsDeliveryLog {
                    if plans[p].recorded.isEmpty {
                        plans[p].recorded = send.deliveries
                    } else {
                        plans[p].recorded += send.deliveries
                    }
                }
                continue
            }
            for (m, delivery) in send.deliveries.enumerated() {
                // A service that answered for fewer messages than it was given: the rest failed.
                let outcome =
                    m < outcomes.count ? outcomes[m] : .refused(name: "PnsUnreachable", text: "The push service gave no outcome")
                let text: String
                switch outcome {
                case .delivered:
                    plans[p].counts["Success", default: 0] += 1
                    if provider.keepsDeliveryLog { plans[p].recorded.append(delivery) }
                    text = NotificationOutcome.sent
                case .refused(let name, let refusal):
                    plans[p].counts[name, default: 0] += 1
                    text = refusal
                }
                if let line = reportLines?[m] { plans[p].results[line].outcome = text }
            }
        }
        return provider.keepsDeliveryLog ? sends.flatMap(\.deliveries) : []
    }

    /// How the dispatcher retries a store that failed to write: from 50 ms to 5 s.
    static let storeBackoff = Backoff(base: 0.05, maximum: 5)

    /// Gives every message of a service that keeps the delivery log its sequence number,
    /// reserving a new block durably first when the current one is used up: numbers handed
    /// out before a crash are never reused. False when the engine stopped while waiting.
    private func number(_ plans: inout [DispatchPlan]) async -> Bool {
        // Service by service, plan by plan: the order `dispatch` hands them out in, so each
        // device's deliveries are published in increasing order.
        let logged = pushOrder.filter(\.keepsDeliveryLog).map(\.platform)
        let count = Int64(plans.reduce(0) { total, plan in total + logged.reduce(0) { $0 + (plan.messages[$1]?.count ?? 0) } })
        guard count > 0 else { return true }
        var (next, reserved) = sequence.withLock { ($0.next, $0.reserved) }
        if next + count - 1 > reserved {
            let target = max(next + count - 1, reserved + Self.reservationBlock)
            var backoff = Self.storeBackoff
            while true {
                do {
                    try await store.reserveSequence(through: target)
                    break
                } catch {
                    logger.error("reserving delivery numbers failed, retrying: \(error)")
                    try? await Task.sleep(nanoseconds: UInt64(backoff.fail() * 1_000_000_000))
                    if Task.isCancelled { return false }
                }
            }
            reserved = target
        }
        for platform in logged {
            for p in plans.indices {
                guard let count = plans[p].messages[platform]?.count else { continue }
                for m in 0..<count {
                    plans[p].messages[platform]![m].seq = next
                    next += 1
                }
            }
        }
        sequence.withLock { $0 = (next, reserved) }
        return true
    }

    /// Delivery numbers reserved at a time.
    static let reservationBlock: Int64 = 10_000

    /// Plans a notification against the hub's current tables without sending anything.
    public func plan(_ notification: StoredNotification, now: Date = Date()) -> DispatchPlan {
        directory.withLock { directory in
            Self.plan(
                notification, tables: directory[notification.hub], providers: pushServices, now: now, testLimit: testSendLimit)
        }
    }

    /// Matches targets through the tag index, renders each distinct template once per send,
    /// has each payload checked by the push service of its platform, and makes a message for
    /// every device reached; a target whose platform has no push service is `Skipped`.
    static func plan(
        _ notification: StoredNotification, tables: HubTables?, providers: [Platform: any PushService], now: Date,
        testLimit: Int
    ) -> DispatchPlan {
        var n = notification
        n.started = now
        var plan = DispatchPlan(notification: n)
        let reportLimit = n.isTest ? testLimit : 0
        // Messages gather in a bucket for the current platform, moved into the plan when the
        // platform changes and at the end: no dictionary work per device of a fan-out.
        var bucket: [Delivery] = []
        var bucketPlatform: Platform?
        var bucketReports: [Int: Int] = [:]
        func flush() {
            guard let platform = bucketPlatform, !bucket.isEmpty else { return }
            let offset = plan.messages[platform]?.count ?? 0
            for (m, line) in bucketReports { plan.reportLines[platform, default: [:]][offset + m] = line }
            bucketReports.removeAll()
            if offset == 0 {
                // The usual case, one platform: the bucket becomes the plan's list, uncopied.
                plan.messages[platform] = bucket
                bucket = []
            } else {
                plan.messages[platform]! += bucket
                bucket.removeAll(keepingCapacity: true)
            }
        }

        // Registration ids are worked out only for the results a test send reports.
        func deliver(
            _ platform: Platform, device: String, template: String, payload: String,
            registrationId: @autoclosure () -> String, handle: String
        ) {
            if bucketPlatform != platform {
                flush()
                bucketPlatform = platform
            }
            if plan.results.count < reportLimit {
                bucketReports[bucket.count] = plan.results.count
                plan.results.append(
                    .init(
                        applicationPlatform: platform.nativeFormat.rawValue, pnsHandle: handle,
                        registrationId: registrationId(), outcome: ""))
            }
            bucket.append(
                Delivery(
                    seq: 0, hub: n.hub, device: device, notificationId: n.id, template: template, payload: payload,
                    delivered: now, tags: n.tagExpression))
        }
        func refuse(
            _ outcomeName: String, text: String, platform: Platform, registrationId: @autoclosure () -> String, handle: String
        ) {
            plan.counts[outcomeName, default: 0] += 1
            if plan.results.count < reportLimit {
                plan.results.append(
                    .init(
                        applicationPlatform: platform.nativeFormat.rawValue, pnsHandle: handle, registrationId: registrationId(),
                        outcome: text))
            }
        }
        func unserved(_ platform: Platform) -> (name: String, text: String) {
            ("Skipped", "The local hub has no push service for \(platform)")
        }

        if let handle = n.directHandle {
            let platform = n.format.platform ?? .apns
            guard let provider = providers[platform] else {
                let (name, text) = unserved(platform)
                refuse(name, text: text, platform: platform, registrationId: "", handle: handle)
                return plan
            }
            if case .refused(let name, let text)? = provider.check(Array(n.body.utf8)) {
                refuse(name, text: text, platform: platform, registrationId: "", handle: handle)
            } else {
                let compact = (try? JSONValue(parsing: n.body))?.text ?? n.body
                deliver(platform, device: handle.lowercased(), template: "", payload: compact, registrationId: "", handle: handle)
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
            var nativeChecks: [Platform: PushOutcome?] = [:]
            bucket.reserveCapacity(slots.count)
            // The service of the platform of the targets at hand, looked up when it changes.
            var servedPlatform: Platform?
            var service: (any PushService)?
            for slot in slots {
                let target = tables.index.target(slot)
                if servedPlatform != target.platform {
                    servedPlatform = target.platform
                    service = providers[target.platform]
                }
                guard service != nil else {
                    let (name, text) = unserved(target.platform)
                    refuse(
                        name, text: text, platform: target.platform, registrationId: target.registrationId,
                        handle: target.device)
                    continue
                }
                let payload: String
                let refusal: PushOutcome?
                if isTemplate {
                    let number = Int(target.templateNumber)
                    if let cached = rendered[number], cached.platform == target.platform {
                        (payload, refusal) = (cached.payload, cached.refusal)
                    } else if let template = target.template, let properties {
                        let bytes = template.render(properties)
                        let entry = (
                            payload: String(decoding: bytes, as: UTF8.self), refusal: service!.check(bytes),
                            platform: target.platform
                        )
                        rendered[number] = entry
                        (payload, refusal) = (entry.payload, entry.refusal)
                    } else {
                        let invalid = APNsPayloadRules.invalid
                        (payload, refusal) = ("", .refused(name: invalid.outcomeName, text: invalid.outcomeText))
                    }
                } else {
                    payload = nativePayload
                    if let checked = nativeChecks[target.platform] {
                        refusal = checked
                    } else {
                        refusal = service!.check(Array(n.body.utf8))
                        nativeChecks[target.platform] = .some(refusal)
                    }
                }
                if case .refused(let name, let text)? = refusal {
                    refuse(
                        name, text: text, platform: target.platform, registrationId: target.registrationId, handle: target.device)
                } else {
                    deliver(
                        target.platform, device: target.device, template: target.templateName ?? "", payload: payload,
                        registrationId: target.registrationId, handle: target.device)
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
    typealias Entry = (payload: String, refusal: PushOutcome?, platform: Platform)
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
