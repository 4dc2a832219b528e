import Foundation
import NotificationHubs

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

    /// Plans a batch, numbers what the delivery log keeps, hands those messages to the
    /// built-in push service (its streams see them at once), then writes every delivery and
    /// final state in one commit. Messages for real push services (APNs, FCM, Web Push) go
    /// out after that commit, off the dispatcher (`finishElsewhere`): a slow or throttled
    /// provider never holds back the next batch. A failed commit is retried: nothing is
    /// half-recorded, and a crash before a notification's last commit leaves it enqueued or
    /// processing, so it is dispatched again at restart (receivers dedupe).
    private func dispatch(_ jobs: [DispatchJob]) async {
        // On a shared store, installations acknowledged on other nodes are planned for too.
        do {
            try await catchUp()
        } catch {
            logger.warning("catching up with other nodes before a dispatch failed: \(error)")
        }
        let now = Date()
        var plans = directory.withLock { directory in
            jobs.map {
                Self.plan(
                    $0.notification, tables: directory[$0.notification.hub], providers: pushServices, now: now,
                    testLimit: testSendLimit)
            }
        }
        guard await number(&plans) else { return Self.unanswered(jobs) }
        // What services that keep the delivery log were handed: published to live streams
        // before the commit, so all of it is marked recorded after, delivered or not.
        var published: [Delivery] = []
        var gone: [ChannelGone] = []
        for provider in pushOrder where provider.keepsDeliveryLog {
            published += await push(&plans, through: provider, gone: &gone)
        }
        let real = pushOrder.filter { !$0.keepsDeliveryLog }
        let waiting = plans.map { plan in real.contains { plan.messages[$0.kind]?.isEmpty == false } }
        guard await record(plans, waiting: waiting) else { return Self.unanswered(jobs) }
        streams.markRecorded(published)
        follower?.wakeFeed()
        finish(jobs, plans, gone: gone, waiting: waiting)
        let later = plans.indices.filter { waiting[$0] }
        guard !later.isEmpty else { return }
        // At most `realDispatchLimit` batches wait on real services at once; then the
        // dispatcher waits too (what it holds stays bounded).
        await realDispatches.acquire()
        let (laterJobs, laterPlans) = (later.map { jobs[$0] }, later.map { plans[$0] })
        let started = realTasks.withLock { tasks -> Bool in
            // Once stopping, nothing new goes out: they stay processing, for the restart.
            guard !tasks.stopped else { return false }
            let key = tasks.next
            tasks.next += 1
            // Made under the lock, so it is listed before its end takes it off.
            tasks.running[key] = Task {
                await finishElsewhere(laterJobs, laterPlans, through: real)
                realDispatches.release()
                _ = realTasks.withLock { $0.running.removeValue(forKey: key) }
            }
            return true
        }
        if !started {
            realDispatches.release()
            Self.unanswered(laterJobs)
        }
    }

    /// The second half of a dispatch: the real services' messages, then the final states.
    private func finishElsewhere(_ jobs: [DispatchJob], _ plans: [DispatchPlan], through services: [any PushService]) async {
        var plans = plans
        var gone: [ChannelGone] = []
        for provider in services { _ = await push(&plans, through: provider, gone: &gone) }
        // Stopping cancelled the requests: what they answered is not the services' word, so
        // nothing is recorded and the notifications stay processing, to go out at restart.
        if Task.isCancelled { return Self.unanswered(jobs) }
        let done = Array(repeating: false, count: plans.count)
        // Deliveries of the built-in service were written in the first commit.
        for p in plans.indices { plans[p].recorded = [] }
        guard await record(plans, waiting: done) else { return Self.unanswered(jobs) }
        finish(jobs, plans, gone: gone, waiting: done)
    }

    /// Writes the plans' deliveries and states: `Processing` for those still `waiting` on a
    /// real service, final otherwise. Retried until it is written; false when the engine
    /// stopped meanwhile.
    private func record(_ plans: [DispatchPlan], waiting: [Bool]) async -> Bool {
        let records = zip(plans, waiting).map { plan, waiting -> DispatchRecord in
            var n = plan.notification
            n.outcomeCounts = plan.counts
            n.report = zip(plan.results, plan.resultNames).map { result, name in
                SendExplanation.Line(
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
        while true {
            do {
                _ = try await store.record(records)
                return true
            } catch {
                logger.error("recording \(records.count) dispatches failed, retrying: \(error)")
                try? await Task.sleep(nanoseconds: UInt64(backoff.fail() * 1_000_000_000))
                if Task.isCancelled { return false }
            }
        }
    }

    /// What follows a notification's final commit: its metrics, a test send's answer, and the
    /// channels its services said are gone.
    private func finish(_ jobs: [DispatchJob], _ plans: [DispatchPlan], gone: [ChannelGone], waiting: [Bool]) {
        // Channels a service said are gone stop being sent to once the writer marks them;
        // the dispatcher does not wait for that.
        if !gone.isEmpty {
            Task { [gone] in
                for channel in Set(gone) { _ = try? await self.write(.channelGone(channel)) }
            }
        }
        for (job, (plan, waiting)) in zip(jobs, zip(plans, waiting)) where !waiting {
            metrics.deliveries(plan.counts)
            let success = plan.counts.reduce(0) { $0 + (OutcomeKey.isSuccess($1.key) ? $1.value : 0) }
            job.outcome?.fulfil(
                NotificationOutcome(
                    success: success, failure: plan.counts.values.reduce(0, +) - success, results: plan.results))
        }
    }

    /// Answers test sends the hub stopped before it finished: no outcome (never left waiting).
    static func unanswered(_ jobs: [DispatchJob]) {
        for job in jobs { job.outcome?.fulfil(NotificationOutcome(success: 0, failure: 0, results: [])) }
    }

    /// Batches that may wait on real push services at once.
    static let realDispatchLimit = 16

    /// Hands one service the messages of every plan at once (in numbering order) and counts
    /// what it answers; returns what it was handed when it keeps the delivery log.
    private func push(_ plans: inout [DispatchPlan], through provider: any PushService, gone: inout [ChannelGone]) async
        -> [Delivery]
    {
        let kind = provider.kind
        let platform = provider.platform
        let success = OutcomeKey.key(.success, platform: platform)
        var sends: [PushSend] = []
        var owners: [Int] = []
        for p in plans.indices {
            guard let deliveries = plans[p].messages[kind] else { continue }
            sends.append(PushSend(notification: plans[p].notification, deliveries: deliveries))
            owners.append(p)
        }
        guard !sends.isEmpty else { return [] }
        let answers = await provider.push(sends)
        for (k, send) in sends.enumerated() {
            let p = owners[k]
            let outcomes = k < answers.count ? answers[k] : []
            let reportLines = plans[p].reportLines[kind]
            // The usual answer, every message delivered, is counted and recorded in bulk.
            if outcomes.count == send.deliveries.count, outcomes.allSatisfy({ $0 == .delivered }) {
                plans[p].counts[success, default: 0] += outcomes.count
                for line in (reportLines ?? [:]).values {
                    plans[p].results[line].outcome = NotificationOutcome.sent
                    plans[p].resultNames[line] = .success
                }
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
                    m < outcomes.count ? outcomes[m] : .refused(name: .pnsUnreachable, text: "The push service gave no outcome")
                let (name, text): (OutcomeName, String)
                switch outcome {
                case .delivered:
                    plans[p].counts[success, default: 0] += 1
                    if provider.keepsDeliveryLog { plans[p].recorded.append(delivery) }
                    (name, text) = (.success, NotificationOutcome.sent)
                case .refused(let refused, let refusal):
                    plans[p].counts[OutcomeKey.key(refused, platform: platform), default: 0] += 1
                    (name, text) = (refused, refusal)
                case .gone(let goneName, let refusal):
                    plans[p].counts[OutcomeKey.key(goneName, platform: platform), default: 0] += 1
                    gone.append(
                        ChannelGone(hub: delivery.hub, device: delivery.device, platform: platform, reason: goneName.rawValue))
                    (name, text) = (goneName, refusal)
                }
                if let line = reportLines?[m] {
                    plans[p].results[line].outcome = text
                    plans[p].resultNames[line] = name
                }
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
        // A shared store numbers them as it commits them (`SharedHubStore`): seq 0.
        guard follower == nil else { return true }
        let logged = pushOrder.filter(\.keepsDeliveryLog).map(\.kind)
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
        for kind in logged {
            for p in plans.indices {
                guard let count = plans[p].messages[kind]?.count else { continue }
                for m in 0..<count {
                    plans[p].messages[kind]![m].seq = next
                    next += 1
                }
            }
        }
        sequence.withLock { $0 = (next, reserved) }
        return true
    }

    /// Delivery numbers reserved at a time.
    static let reservationBlock: Int64 = 10_000
}
