import Foundation
import NotificationHubs

extension HubDispatcher {
    /// Backs off a store that failed to write: from 50 ms to 5 s.
    static let storeBackoff = Backoff(base: 0.05, maximum: 5)

    /// Plans a batch, numbers what the delivery log keeps, hands it to the built-in push
    /// service and commits; returns the batch's part still waiting on external services. A
    /// batch whose numbering or commit no retry mends is abandoned (`abandon`), each send
    /// with the reason.
    func dispatch(_ jobs: [Job]) async -> (jobs: [Job], plans: [DispatchPlan])? {
        let worn = jobs.filter { $0.notification.dispatchStarts > Self.mostStarts }
        await abandon(
            worn.map {
                ($0, "its dispatch was begun at \(Self.mostStarts) starts of the hub without finishing; it is not begun again")
            })
        let batch = worn.isEmpty ? jobs : jobs.filter { $0.notification.dispatchStarts <= Self.mostStarts }
        guard !batch.isEmpty else { return nil }
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
        do {
            guard try await coordination.number(&plans, logged: logged.map(\.kind), stopping: { self.isStopping }) else {
                Self.unanswered(batch)
                return nil
            }
        } catch {
            await abandon(batch, reason: "its deliveries could not be numbered: \(error)")
            return nil
        }
        // What services that keep the delivery log were handed: published to live streams
        // before the commit, so all of it is marked recorded after, delivered or not.
        var published: [Delivery] = []
        var gone: [ChannelGone] = []
        for service in logged { published += await push(&plans, through: service, gone: &gone) }
        let waiting = plans.map { plan in services.contains { !$0.keepsDeliveryLog && plan.messages[$0.kind]?.isEmpty == false } }
        guard let recorded = await record(plans, waiting: waiting) else {
            coordination.recorded(published: published, written: [])
            Self.unanswered(batch)
            return nil
        }
        coordination.recorded(published: published, written: recorded.written)
        let kept = plans.indices.filter { recorded.refused[$0] == nil }
        await abandon(recorded.refused.sorted { $0.key < $1.key }.map { (batch[$0.key], $0.value) })
        finish(kept.map { batch[$0] }, kept.map { plans[$0] }, gone: gone, waiting: kept.map { waiting[$0] })
        let later = kept.filter { waiting[$0] }
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
        guard let recorded = await record(plans, waiting: done) else { return Self.unanswered(batch) }
        let kept = plans.indices.filter { recorded.refused[$0] == nil }
        await abandon(recorded.refused.sorted { $0.key < $1.key }.map { (batch[$0.key], $0.value) })
        finish(kept.map { batch[$0] }, kept.map { plans[$0] }, gone: gone, waiting: kept.map { _ in false })
    }

    /// Devices that got a send kept in its report for `explain`: the report is kept as long as
    /// the send, and a line per device was most of what a delivery cost (258 of 295 bytes).
    static let successLinesKept = 5

    /// What recording a batch came to: the deliveries written, and the plans (by index) whose
    /// record no retry would write, with the reason.
    struct Recorded {
        var written: [Delivery] = []
        var refused: [Int: String] = [:]
    }

    /// Writes the plans' deliveries and states: `Processing` for those still `waiting` on an
    /// external service, final otherwise. Retried until it is written; a batch refused for
    /// good is written one plan at a time, so that only a plan refused alone is left out.
    /// Nil when the engine stopped meanwhile.
    private func record(_ plans: [DispatchPlan], waiting: [Bool]) async -> Recorded? {
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
        var recorded = Recorded()
        do {
            guard let written = try await write(records) else { return nil }
            recorded.written = written
        } catch {
            guard records.count > 1 else {
                recorded.refused[0] = "its dispatch could not be recorded: \(error)"
                return recorded
            }
            for (index, record) in records.enumerated() {
                do {
                    guard let written = try await write([record]) else { return nil }
                    recorded.written += written
                } catch {
                    recorded.refused[index] = "its dispatch could not be recorded: \(error)"
                }
            }
        }
        for record in records where !record.deliveries.isEmpty {
            var payloads: Set<String> = []
            for delivery in record.deliveries { payloads.insert(delivery.payload) }
            logGrowth.add(count: record.deliveries.count, payloadBytes: payloads.reduce(0) { $0 + $1.utf8.count })
        }
        return recorded
    }

    /// Records `records`, retried while a retry may mend it and the engine runs: nil once it
    /// stops; throws what no retry mends.
    private func write(_ records: [DispatchRecord]) async throws -> [Delivery]? {
        var backoff = Self.storeBackoff
        return try await backoff.retrying {
            try await store.record(records)
        } failed: { error in
            logger.error("recording \(records.count) dispatches failed, retrying: \(error)")
        } stopping: {
            isStopping
        }
    }

    /// Dispatches begun at this many starts of the hub (or takeovers by nodes) without
    /// finishing: the next is not begun, the send is abandoned. A send that stops the hub
    /// (or its node) would otherwise stop it at every start.
    static let mostStarts = 3

    /// Ends sends as `Abandoned`, each with its reason kept in its report (`explain` shows
    /// it), and answers test sends: what a dispatch no retry mends comes to, so that one send
    /// never holds back those after it.
    func abandon(_ jobs: [(job: Job, reason: String)]) async {
        guard !jobs.isEmpty else { return }
        let now = Date()
        let records = jobs.map { job, reason in
            var n = job.notification
            n.state = .abandoned
            n.started = n.started ?? now
            n.ended = now
            n.report = [
                SendExplanation.Line(
                    platform: "", handle: "", registrationId: "", outcome: NotificationDetails.State.abandoned.rawValue,
                    text: reason)
            ]
            return DispatchRecord(notification: n, deliveries: [])
        }
        for (job, reason) in jobs {
            logger.error("abandoned the notification \(job.notification.id) of hub '\(job.notification.hub)': \(reason)")
        }
        do {
            _ = try await write(records)
        } catch {
            logger.error("recording \(records.count) abandoned notifications failed: \(error)")
        }
        Self.unanswered(jobs.map(\.job))
    }

    func abandon(_ jobs: [Job], reason: String) async { await abandon(jobs.map { ($0, reason) }) }

    /// What follows a notification's final commit: its metrics, a test send's answer, and the
    /// channels its services said are gone.
    private func finish(_ batch: [Job], _ plans: [DispatchPlan], gone: [ChannelGone], waiting: [Bool]) {
        // Channels a service said are gone stop being sent to once the writer marks them; the
        // dispatcher does not wait for that.
        for channel in Set(gone) { writes.post(.channelGone(channel)) }
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
