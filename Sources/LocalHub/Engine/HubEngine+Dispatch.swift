import Foundation
import NotificationHubs

/// The result of planning one notification: what to deliver and what to report.
public struct DispatchPlan: Sendable {
    public var record: DispatchRecord
    /// Per-device results for test sends (at most the test limit); counts for every send.
    public var outcome: NotificationOutcome
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

    /// Plans a batch and numbers its deliveries, hands them to live streams at once, then
    /// writes every delivery and final state in one commit. A failed commit is retried:
    /// nothing is half-recorded, and a crash before the commit leaves the notifications
    /// undispatched, so they are dispatched again at restart (receivers dedupe).
    private func dispatch(_ jobs: [DispatchJob]) async {
        let now = Date()
        var plans = directory.withLock { directory in
            jobs.map { Self.plan($0.notification, tables: directory[$0.notification.hub], now: now, testLimit: testSendLimit) }
        }
        guard await number(&plans) else { return }
        let deliveries = plans.flatMap(\.record.deliveries)
        streams.publish(deliveries, recorded: false)
        var backoff = Self.storeBackoff
        while true {
            do {
                _ = try await store.record(plans.map(\.record))
                break
            } catch {
                logger.error("recording \(plans.count) dispatches failed, retrying: \(error)")
                try? await Task.sleep(nanoseconds: UInt64(backoff.fail() * 1_000_000_000))
                if Task.isCancelled { return }
            }
        }
        streams.markRecorded(deliveries)
        for (job, plan) in zip(jobs, plans) {
            metrics.deliveries(plan.record.notification.outcomeCounts)
            job.outcome?.fulfil(plan.outcome)
        }
    }

    /// How the dispatcher retries a store that failed to write: from 50 ms to 5 s.
    static let storeBackoff = Backoff(base: 0.05, maximum: 5)

    /// Gives every delivery its sequence number, reserving a new block durably first when
    /// the current one is used up: numbers handed out before a crash are never reused.
    /// False when the engine stopped while waiting.
    private func number(_ plans: inout [DispatchPlan]) async -> Bool {
        let count = Int64(plans.reduce(0) { $0 + $1.record.deliveries.count })
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
        for p in plans.indices {
            for d in plans[p].record.deliveries.indices {
                plans[p].record.deliveries[d].seq = next
                next += 1
            }
        }
        sequence.withLock { $0 = (next, reserved) }
        return true
    }

    /// Delivery numbers reserved at a time.
    static let reservationBlock: Int64 = 10_000

    /// Plans a notification against the hub's current tables without recording anything.
    public func plan(_ notification: StoredNotification, now: Date = Date()) -> DispatchPlan {
        directory.withLock { directory in
            Self.plan(notification, tables: directory[notification.hub], now: now, testLimit: testSendLimit)
        }
    }

    /// Matches targets through the tag index, renders each distinct template once per send,
    /// checks each payload by the APNs rules and counts the outcomes.
    static func plan(_ notification: StoredNotification, tables: HubTables?, now: Date, testLimit: Int) -> DispatchPlan {
        var n = notification
        n.started = now
        var counts: [String: Int] = [:]
        var results: [NotificationOutcome.Result] = []
        var deliveries: [Delivery] = []
        let reportLimit = n.isTest ? testLimit : 0

        var succeeded = 0
        // Registration ids are worked out only for the results a test send reports.
        func deliver(device: String, template: String, payload: String, registrationId: @autoclosure () -> String, handle: String)
        {
            deliveries.append(
                Delivery(
                    seq: 0, hub: n.hub, device: device, notificationId: n.id, template: template, payload: payload,
                    delivered: now,
                    tags: n.tagExpression))
            succeeded += 1
            if results.count < reportLimit {
                results.append(
                    .init(
                        applicationPlatform: "apple", pnsHandle: handle, registrationId: registrationId(),
                        outcome: NotificationOutcome.sent))
            }
        }
        func refuse(
            _ outcomeName: String, text: String, platform: Platform, registrationId: @autoclosure () -> String, handle: String
        ) {
            counts[outcomeName, default: 0] += 1
            if results.count < reportLimit {
                results.append(
                    .init(
                        applicationPlatform: platform.nativeFormat.rawValue, pnsHandle: handle, registrationId: registrationId(),
                        outcome: text))
            }
        }

        if let handle = n.directHandle {
            if let violation = APNsPayloadRules.check(Array(n.body.utf8)) {
                refuse(violation.outcomeName, text: violation.outcomeText, platform: .apns, registrationId: "", handle: handle)
            } else {
                let compact = (try? JSONValue(parsing: n.body))?.text ?? n.body
                deliver(device: handle.lowercased(), template: "", payload: compact, registrationId: "", handle: handle)
            }
        } else if let tables {
            let expression = n.tagExpression.flatMap { try? TagExpression(parsing: $0) }
            let isTemplate = n.format == .template
            var slots = Array(tables.index.resolve(expression, templates: isTemplate))
            deliveries.reserveCapacity(slots.count)
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
            let nativeViolation = isTemplate ? nil : APNsPayloadRules.check(Array(n.body.utf8))
            // Deliveries carry compact JSON: a payload is one line of a stream frame.
            let nativePayload = isTemplate ? "" : ((try? JSONValue(parsing: n.body))?.text ?? n.body)
            for slot in slots {
                let target = tables.index.target(slot)
                guard target.platform == .apns else {
                    refuse(
                        "Skipped", text: "The local hub has no push service for \(target.platform)", platform: target.platform,
                        registrationId: target.registrationId, handle: target.device)
                    continue
                }
                let payload: String
                let violation: APNsPayloadRules.Violation?
                if isTemplate {
                    let number = Int(target.templateNumber)
                    if let cached = rendered[number] {
                        (payload, violation) = cached
                    } else if let template = target.template, let properties {
                        let bytes = template.render(properties)
                        let entry = (String(decoding: bytes, as: UTF8.self), APNsPayloadRules.check(bytes))
                        rendered[number] = entry
                        (payload, violation) = entry
                    } else {
                        (payload, violation) = ("", APNsPayloadRules.invalid)
                    }
                } else {
                    payload = nativePayload
                    violation = nativeViolation
                }
                if let violation {
                    refuse(
                        violation.outcomeName, text: violation.outcomeText, platform: .apns,
                        registrationId: target.registrationId,
                        handle: target.device)
                } else {
                    deliver(
                        device: target.device, template: target.templateName ?? "", payload: payload,
                        registrationId: target.registrationId, handle: target.device)
                }
            }
        }
        if succeeded > 0 { counts["Success"] = succeeded }
        n.ended = Date()
        n.outcomeCounts = counts
        n.state = counts.isEmpty ? .noTargetFound : .completed
        let success = counts["Success"] ?? 0
        let failure = counts.filter { $0.key != "Success" }.values.reduce(0, +)
        return DispatchPlan(
            record: DispatchRecord(notification: n, deliveries: deliveries),
            outcome: NotificationOutcome(success: success, failure: failure, results: results))
    }
}

/// Each distinct template's rendering of one send, by template number: an array when the
/// numbers are few for the targets reached, a dictionary when a hub holds many bodies and the
/// send reaches few of them (an array would cost every send the size of the whole hub).
struct RenderCache {
    typealias Entry = (payload: String, violation: APNsPayloadRules.Violation?)
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
