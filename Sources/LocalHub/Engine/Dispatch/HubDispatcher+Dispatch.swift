import Foundation
import NotificationHubs

extension HubDispatcher {
    /// Backs off a store that failed to write: from 50 ms to 5 s.
    static let storeBackoff = Backoff(base: 0.05, maximum: 5)

    /// Plans a batch, numbers what the delivery log keeps, hands it to the built-in push
    /// service and commits; returns the batch's part still waiting on external services.
    func dispatch(_ batch: [Job]) async -> (jobs: [Job], plans: [DispatchPlan])? {
        // On a shared store, installations acknowledged on other nodes are planned for too.
        do {
            try await coordination.catchUp()
        } catch {
            logger.warning("catching up with other nodes before a dispatch failed: \(error)")
        }
        let now = Date()
        var plans = state.directory.withLock { directory in
            batch.map { planner.plan($0.notification, tables: directory[$0.notification.hub], now: now) }
        }
        let logged = services.filter(\.keepsDeliveryLog)
        guard await coordination.number(&plans, logged: logged.map(\.kind)) else {
            Self.unanswered(batch)
            return nil
        }
        // What services that keep the delivery log were handed: published to live streams
        // before the commit, so all of it is marked recorded after, delivered or not.
        var published: [Delivery] = []
        var gone: [ChannelGone] = []
        for service in logged { published += await push(&plans, through: service, gone: &gone) }
        let waiting = plans.map { plan in services.contains { !$0.keepsDeliveryLog && plan.messages[$0.kind]?.isEmpty == false } }
        guard let written = await record(plans, waiting: waiting) else {
            Self.unanswered(batch)
            return nil
        }
        coordination.recorded(published: published, written: written)
        finish(batch, plans, gone: gone, waiting: waiting)
        let later = plans.indices.filter { waiting[$0] }
        guard !later.isEmpty else { return nil }
        return (later.map { batch[$0] }, later.map { plans[$0] })
    }

    /// The second half of a dispatch: the external services' messages, then the final states.
    func finishExternally(_ batch: [Job], _ plans: [DispatchPlan]) async {
        var plans = plans
        var gone: [ChannelGone] = []
        for service in services where !service.keepsDeliveryLog { _ = await push(&plans, through: service, gone: &gone) }
        // Stopping cancelled the requests: what they answered is not the services' word, so
        // nothing is recorded and the notifications stay processing, to go out at restart.
        if Task.isCancelled { return Self.unanswered(batch) }
        let done = Array(repeating: false, count: plans.count)
        // Deliveries of the built-in service were written in the first commit.
        for p in plans.indices { plans[p].recorded = [] }
        guard await record(plans, waiting: done) != nil else { return Self.unanswered(batch) }
        finish(batch, plans, gone: gone, waiting: done)
    }

    /// Devices that got a send kept in its report for `explain`: the report is kept as long as
    /// the send, and a line per device was most of what a delivery cost (258 of 295 bytes).
    static let successLinesKept = 5

    /// Writes the plans' deliveries and states: `Processing` for those still `waiting` on an
    /// external service, final otherwise. Retried until it is written; returns the deliveries
    /// written, or nil when the engine stopped meanwhile.
    private func record(_ plans: [DispatchPlan], waiting: [Bool]) async -> [Delivery]? {
        let records = zip(plans, waiting).map { plan, waiting -> DispatchRecord in
            var n = plan.notification
            n.outcomeCounts = plan.counts
            // A few devices that got it show that it went; every other outcome shows why not.
            var successes = 0
            n.report = zip(plan.results, plan.resultNames).compactMap { result, name in
                if name == .success {
                    successes += 1
                    guard successes <= Self.successLinesKept else { return nil }
                }
                return SendExplanation.Line(
                    platform: result.applicationPlatform, handle: result.pnsHandle, registrationId: result.registrationId,
                    outcome: name?.rawValue ?? "", text: result.outcome)
            }
            if waiting {
                n.state = .processing
            } else {
                n.ended = Date()
                n.state = plan.counts.isEmpty ? .noTargetFound : .completed
            }
            return DispatchRecord(notification: n, deliveries: plan.recorded)
        }
        var backoff = Self.storeBackoff
        let written = await backoff.retrying {
            try await store.record(records)
        } failed: { error in
            logger.error("recording \(records.count) dispatches failed, retrying: \(error)")
        }
        for record in records where !record.deliveries.isEmpty {
            var payloads: Set<String> = []
            for delivery in record.deliveries { payloads.insert(delivery.payload) }
            logGrowth.add(count: record.deliveries.count, payloadBytes: payloads.reduce(0) { $0 + $1.utf8.count })
        }
        return written
    }

    /// What follows a notification's final commit: its metrics, a test send's answer, and the
    /// channels its services said are gone.
    private func finish(_ batch: [Job], _ plans: [DispatchPlan], gone: [ChannelGone], waiting: [Bool]) {
        // Channels a service said are gone stop being sent to once the writer marks them; the
        // dispatcher does not wait for that.
        if !gone.isEmpty {
            Task { [gone, writes] in
                for channel in Set(gone) { _ = try? await writes.submit(.channelGone(channel)) }
            }
        }
        for (job, (plan, waiting)) in zip(batch, zip(plans, waiting)) where !waiting {
            metrics.deliveries(plan.counts)
            let success = plan.counts.reduce(0) { $0 + (OutcomeKey.isSuccess($1.key) ? $1.value : 0) }
            job.outcome?.fulfil(
                NotificationOutcome(
                    success: success, failure: plan.counts.values.reduce(0, +) - success, results: plan.results))
        }
    }

    /// Hands one service the messages of every plan at once (in numbering order) and counts
    /// what it answers; returns what it was handed when it keeps the delivery log.
    private func push(_ plans: inout [DispatchPlan], through service: any PushService, gone: inout [ChannelGone]) async
        -> [Delivery]
    {
        var sends: [PushSend] = []
        var owners: [Int] = []
        for p in plans.indices {
            guard let deliveries = plans[p].messages[service.kind] else { continue }
            sends.append(PushSend(notification: plans[p].notification, deliveries: deliveries))
            owners.append(p)
        }
        guard !sends.isEmpty else { return [] }
        let answers = await service.push(sends)
        for (k, send) in sends.enumerated() {
            let outcomes = k < answers.count ? answers[k] : []
            plans[owners[k]].count(outcomes, of: send.deliveries, by: service, gone: &gone)
        }
        return service.keepsDeliveryLog ? sends.flatMap(\.deliveries) : []
    }
}

extension DispatchPlan {
    /// Counts what `service` answered for this plan's `deliveries` (a missing answer is
    /// `PnsUnreachable`), fills the report's lines, and notes the channels gone.
    mutating func count(
        _ outcomes: [PushOutcome], of deliveries: [Delivery], by service: any PushService, gone: inout [ChannelGone]
    ) {
        let platform = service.platform
        let lines = reportLines[service.kind]
        // The usual answer, every message delivered, is counted and recorded in bulk.
        if outcomes.count == deliveries.count, outcomes.allSatisfy({ $0 == .delivered }) {
            counts[OutcomeKey.key(.success, platform: platform), default: 0] += outcomes.count
            for line in (lines ?? [:]).values {
                results[line].outcome = NotificationOutcome.sent
                resultNames[line] = .success
            }
            if service.keepsDeliveryLog { recorded = recorded.isEmpty ? deliveries : recorded + deliveries }
            return
        }
        for (m, delivery) in deliveries.enumerated() {
            let outcome =
                m < outcomes.count ? outcomes[m] : .refused(name: .pnsUnreachable, text: "The push service gave no outcome")
            let (name, text): (OutcomeName, String)
            switch outcome {
            case .delivered:
                if service.keepsDeliveryLog { recorded.append(delivery) }
                (name, text) = (.success, NotificationOutcome.sent)
            case .refused(let refused, let refusal):
                (name, text) = (refused, refusal)
            case .gone(let goneName, let refusal):
                gone.append(
                    ChannelGone(hub: delivery.hub, device: delivery.device, platform: platform, reason: goneName.rawValue))
                (name, text) = (goneName, refusal)
            }
            counts[OutcomeKey.key(name, platform: platform), default: 0] += 1
            if let line = lines?[m] {
                results[line].outcome = text
                resultNames[line] = name
            }
        }
    }
}
