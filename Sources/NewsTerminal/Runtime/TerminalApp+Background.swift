import BreakingNewsKit
import Foundation
import NotificationHubs
import Synchronization

/// What the window asks of its connection, in the order asked.
enum ConnectionCommand: Sendable {
    /// Try now; `startingHub` starts the local hub when it is not running.
    case retry(startingHub: Bool)
    /// Receive as the identity the home holds now.
    case followIdentity
    /// The receiver of this generation ended (it gave up).
    case receiverEnded(Int)
}

/// Which receiver is the current one: a replaced receiver's last words are not shown.
final class Generation: Sendable {
    private let value = Mutex(0)

    var current: Int { value.withLock { $0 } }

    /// The next generation, now current.
    func next() -> Int {
        value.withLock { value in
            value += 1
            return value
        }
    }
}

/// The hub endpoint the connection settled on, for sends and subscribes to wait for.
final class EndpointSlot: Sendable {
    private struct State {
        var settled = false
        var endpoint: HubEndpoint?
        var waiters: [UUID: CheckedContinuation<HubEndpoint?, Never>] = [:]
    }

    private let state = Mutex(State())

    /// Settles the endpoint (nil: none could be), for whoever waits and asks later.
    func settle(_ endpoint: HubEndpoint?) {
        let waiters = state.withLock { state in
            state.settled = true
            state.endpoint = endpoint
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: endpoint) }
    }

    /// The endpoint once settled; nil when none could be, or when the task is cancelled.
    func value() async -> HubEndpoint? {
        let id = UUID()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> HubEndpoint?? in
                    if state.settled { return .some(state.endpoint) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiters[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }
}

extension TerminalApp {
    /// The window's background work, as children of one task group: following the log,
    /// watching the home, the connection (with its receiver), and a task for each send,
    /// subscribe and explanation the screen asks for. Ends, cancelling them, when the screen
    /// does.
    func background(_ effects: AsyncStream<Effect>, writes: AsyncStream<HomeWrite>.Continuation, shownThrough: Int) async {
        let (commands, commandSink) = AsyncStream<ConnectionCommand>.makeStream()
        let slot = EndpointSlot()
        let follower = LogFollower(log: profile.log, shownThrough: shownThrough)
        let queue = queue
        let profile = profile
        await withDiscardingTaskGroup { group in
            group.addTask { await follower.run() }
            group.addTask {
                // Every message of the home, whichever process received it.
                for await entries in follower.entries { queue.push(.inbox(.received(entries))) }
            }
            group.addTask {
                // The watch is this task's iteration.
                for await shared in HomeWatcher(profile: profile).changes {
                    // Both read where this window's changes are written: the counts are exact.
                    writes.yield(.shared(shared))
                    writes.yield(.reloadMarks)
                }
            }
            group.addTask { await self.connection(commands, sink: commandSink, slot: slot, follower: follower) }
            for await effect in effects {
                switch effect {
                case .subscribe(let categories):
                    group.addTask {
                        let record = await profile.subscribe(categories, on: await slot.value())
                        queue.push(.registration(record, userInitiated: true))
                    }
                case .send(let text, let categories):
                    group.addTask { queue.push(.sent(await self.send(text, to: categories, on: await slot.value()))) }
                case .explain(let id, let category):
                    group.addTask {
                        let title = "Why: \(category) send"
                        guard let endpoint = await slot.value() else {
                            queue.push(.explained(title: title, lines: ["There is no hub to ask."], failed: true))
                            return
                        }
                        let (lines, failed) = await Explanation.fetch(id, from: endpoint)
                        queue.push(.explained(title: title, lines: lines, failed: failed))
                    }
                case .changeReadMarks(let change): writes.yield(.marks(change))
                case .setAlert(let kind, let on): writes.yield(.alertSwitch(kind, on: on))
                case .reconnect(let startingHub): commandSink.yield(.retry(startingHub: startingHub))
                case .followIdentity: commandSink.yield(.followIdentity)
                case .remember(let sent): writes.yield(.remember(sent))
                // The screen loop writes alerts after the frame, and runs what needs the terminal.
                case .alert, .quit, .openLink, .copy, .pipe, .editMessage: break
                }
            }
            commandSink.finish()
            group.cancelAll()
        }
    }

    /// Sends `text` to `categories`: a row per category, a failure with its whole error and
    /// what to do about it.
    func send(_ text: String, to categories: [BreakingNewsKit.Category], on endpoint: HubEndpoint?) async -> [SendResultRow] {
        guard let endpoint else {
            return categories.map {
                SendResultRow(
                    category: $0, succeeded: false, detail: "no hub to send to",
                    problem: "There is no hub to send to: the header says why (r tries again).")
            }
        }
        do {
            return try await profile.publisher(endpoint).send(text, to: categories).map { result in
                switch result.result {
                case .success(let receipt):
                    return SendResultRow(
                        category: result.category, succeeded: true, detail: receipt.notificationId ?? "",
                        notificationId: receipt.notificationId)
                case .failure(let error):
                    return SendResultRow(
                        category: result.category, succeeded: false, detail: error.readable,
                        problem: HubProblem.line(error, doing: .sending, embedded: endpoint.isEmbedded))
                }
            }
        } catch {
            return categories.map { SendResultRow(category: $0, succeeded: false, detail: "\(error)", problem: "\(error)") }
        }
    }

    /// The connection: settles the hub, registers the stored selection at launch, and keeps
    /// a receiver; then does what the window asks (`r`, a new identity) in order.
    func connection(
        _ commands: AsyncStream<ConnectionCommand>, sink: AsyncStream<ConnectionCommand>.Continuation, slot: EndpointSlot,
        follower: LogFollower
    ) async {
        let profile = profile
        let queue = queue
        let generation = Generation()
        await withDiscardingTaskGroup { group in
            var receiver: InboxReceiver?
            func receive(on endpoint: HubEndpoint) {
                let current = generation.next()
                let started = InboxReceiver(
                    builtInPush: profile.builtInPush(endpoint), log: profile.log, catalog: profile.catalog, follower: follower,
                    starting: .afterCrash)
                receiver = started
                group.addTask { await started.run() }
                group.addTask {
                    for await status in started.statuses where generation.current == current {
                        queue.push(.inbox(.status(status)))
                    }
                    sink.yield(.receiverEnded(current))
                }
            }
            func settle() async -> HubEndpoint? {
                let endpoint = await resolve()
                slot.settle(endpoint)
                guard let endpoint else { return nil }
                let stored = profile.selectedCategories
                // Every launch registers the stored selection again (device handles can change).
                if !stored.isEmpty || profile.lastRegistration != nil {
                    group.addTask {
                        for await outcome in profile.subscriber(endpoint).registerUntilDone(stored) {
                            queue.push(.registration(outcome.record, userInitiated: false))
                        }
                    }
                }
                // A window that stays open renews its installation before it would expire.
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: RegistrationRenewal.checkInterval)
                        guard !Task.isCancelled, RegistrationRenewal.isDue(profile.lastRegistration, now: Date()) else {
                            continue
                        }
                        let outcome = await profile.subscriber(endpoint).register(profile.selectedCategories, retry: .none)
                        queue.push(.registration(outcome.record, userInitiated: false))
                    }
                }
                receive(on: endpoint)
                return endpoint
            }
            var endpoint = await settle()
            for await command in commands {
                switch command {
                case .retry(let startingHub):
                    guard let settled = endpoint else {
                        endpoint = await settle()
                        continue
                    }
                    if let receiver { receiver.retryNow(startingHub: startingHub) } else { receive(on: settled) }
                case .followIdentity:
                    guard let settled = endpoint else { continue }
                    receiver?.stop()
                    receive(on: settled)
                case .receiverEnded(let ended):
                    if generation.current == ended { receiver = nil }
                }
            }
            group.cancelAll()
        }
    }

    /// The hub to talk to, said in the header; nil when none could be settled (said too).
    private func resolve() async -> HubEndpoint? {
        let queue = queue
        do {
            let endpoint = try await HubEndpoint.resolve(hubOptions, paths: profile.paths) { queue.push(.hubStarted) }
            queue.push(.hubReady(Self.describe(endpoint)))
            return endpoint
        } catch {
            queue.push(.hubFailed("\(error)"))
            return nil
        }
    }
}
