import BreakingNewsKit
import Foundation
import Synchronization

/// A count kept on one serial queue.
final class Counter: @unchecked Sendable {
    var value = 0
}

/// Messages from background work to the screen loop.
final class MessageQueue: Sendable {
    private let messages = Mutex<[Message]>([])

    func push(_ message: Message) { messages.withLock { $0.append(message) } }

    func drain() -> [Message] {
        messages.withLock { messages in
            defer { messages = [] }
            return messages
        }
    }
}

/// The terminal UI: one thread owns the screen (keys, drawing); network work runs in tasks
/// that answer with messages, so it never blocks a key or a frame.
public final class TerminalApp: Sendable {
    let profile: NewsProfile
    let hubOptions: HubOptions
    let queue = MessageQueue()
    private let defaultsQueue = DispatchQueue(label: "defaults")
    /// How many of the window's alert switches `defaultsQueue` has stored (touched only there).
    private let storedAlertSwitches = Counter()
    /// Where arrival alerts are claimed (under the log's lock, which appends hold too), and
    /// the bytes of those claimed, for the screen loop to write.
    private let alertQueue = DispatchQueue(label: "alerts")
    private let claimedAlerts = Mutex<[String]>([])
    private let marksQueue = DispatchQueue(label: "read marks")
    /// How many of the window's read-mark changes `marksQueue` has applied (touched only there).
    private let appliedReadChanges = Counter()
    private let endpoint = Mutex<Task<HubEndpoint?, Never>?>(nil)
    /// The receiver while it runs: nil before the hub is settled and after it gave up.
    private let receiver = Mutex<InboxReceiver?>(nil)
    private let follower = Mutex<LogFollower?>(nil)

    public init(profile: NewsProfile, hubOptions: HubOptions) {
        self.profile = profile
        self.hubOptions = hubOptions
    }

    /// The first state, from what is stored locally.
    func initialState(rows: Int, columns: Int) -> AppState {
        let stored = profile.store.load().values
        var state = AppState(
            categories: profile.catalog.categories, selection: profile.selectedCategories,
            registration: stored.lastRegistration, items: profile.log.entries,
            readMarks: profile.log.readMarks, rows: rows, columns: columns, warning: profile.warning, draft: profile.draft)
        state.alerts = stored.arrivalAlerts
        return state
    }

    /// Runs the UI on the curses terminal until the user quits; returns the exit status.
    public func run(mouse: Bool = false) async -> Int32 {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                let terminal = CursesTerminal(mouse: mouse)
                let status = self.loop(terminal: terminal)
                terminal.shutdown()
                continuation.resume(returning: status)
            }
            thread.name = "screen"
            thread.start()
        }
    }

    /// The screen loop; works on any terminal (tests use a virtual one).
    func loop(terminal: Terminal, startBackground: Bool = true) -> Int32 {
        var size = terminal.size
        var state = initialState(rows: size.rows, columns: size.columns)
        Layout.render(state, on: terminal)
        // SIGINT, SIGTERM and SIGHUP become a quit message, so the terminal is always restored.
        let signals = SignalHandler([SIGINT, SIGTERM, SIGHUP]) { [queue] _ in queue.push(.quit) }
        defer { signals.cancel() }
        if startBackground { start(shownThrough: state.items.count) }
        let insideTmux = !(ProcessInfo.processInfo.environment["TMUX"] ?? "").isEmpty
        var lastTick = Date()
        while !state.quitting, !terminal.isClosed {
            let key = terminal.readKey(milliseconds: 50)
            let claimed = claimedAlerts.withLock { claimed in
                defer { claimed = [] }
                return claimed
            }
            for bytes in claimed { terminal.alert(bytes) }
            var messages = queue.drain()
            let newSize = terminal.size
            if newSize != size {
                size = newSize
                messages.append(.resized(rows: size.rows, columns: size.columns))
            }
            if let key { messages.append(.key(key)) }
            let now = Date()
            if now.timeIntervalSince(lastTick) >= 0.25 {
                lastTick = now
                messages.append(.tick(now))
            }
            guard !messages.isEmpty else { continue }
            let before = state
            var effects: [Effect] = []
            for message in messages { effects += state.reduce(message) }
            for effect in effects { perform(effect) }
            if state != before || messages.contains(where: { if case .resized = $0 { return true } else { return false } }) {
                Layout.render(state, on: terminal)
            }
            // After the frame, and once for all that arrived since the last one: a switch's
            // sample here and now; news once per home, by the window that claims it first.
            if let (alerts, text, _) = Effect.mergedAlert(effects, samples: true) {
                terminal.alert(AlertSequence.bytes(alerts, text: text, insideTmux: insideTmux))
            }
            if let (alerts, text, through) = Effect.mergedAlert(effects, samples: false), let through {
                let bytes = AlertSequence.bytes(alerts, text: text, insideTmux: insideTmux)
                alertQueue.async { [self] in
                    if profile.log.claimAlert(through: through) { claimedAlerts.withLock { $0.append(bytes) } }
                }
            }
        }
        // An unsent draft survives quitting.
        var draft = state.compose.text
        if state.compose.sending, draft.starts(with: state.compose.inFlight) {
            // What is being sent is not a draft: only what was typed after it is kept.
            draft = Array(draft.dropFirst(state.compose.inFlight.count).drop { $0 == " " })
        }
        profile.saveDraft(String(draft))
        return 0
    }

    /// Starts the background work: follow the received log (what any process of this home
    /// appends beyond the first `shownThrough` entries), settle the hub, register at launch,
    /// receive.
    func start(shownThrough: Int) {
        let profile = profile
        let queue = queue
        let follower = LogFollower(log: profile.log, shownThrough: shownThrough)
        self.follower.withLock { $0 = follower }
        Task {
            for await entries in follower.entries { queue.push(.inbox(.received(entries))) }
        }
        let watcher = HomeWatcher(profile: profile)
        let marksQueue = marksQueue
        let applied = appliedReadChanges
        let (defaultsQueue, stored) = (defaultsQueue, storedAlertSwitches)
        Task {
            for await shared in watcher.changes {
                // The alerts read again on the queue that stores this window's switches: the
                // count of those stored is exact for the alerts read.
                defaultsQueue.async {
                    var shared = shared
                    shared.alerts = profile.store.load().values.arrivalAlerts
                    queue.push(.shared(shared, alertSwitchesStored: stored.value))
                }
                // Read on the queue that writes this window's changes: the count of those
                // applied is exact for the marks read.
                marksQueue.async { queue.push(.readMarks(profile.log.reloadReadMarks(), changesApplied: applied.value)) }
            }
        }
        connect()
    }

    /// Settles the hub, registers the stored selection, and receives.
    func connect() {
        let profile = profile
        let queue = queue
        let options = hubOptions
        let task = Task<HubEndpoint?, Never> {
            do {
                let endpoint = try await HubEndpoint.resolve(options, paths: profile.paths)
                queue.push(.hubReady(Self.describe(endpoint)))
                return endpoint
            } catch {
                queue.push(.hubFailed("\(error)"))
                return nil
            }
        }
        endpoint.withLock { $0 = task }
        Task {
            guard let endpoint = await task.value else { return }
            let stored = profile.selectedCategories
            // Every launch registers the stored selection again (device handles can change).
            if !stored.isEmpty || profile.store.load().values.lastRegistration != nil {
                Task {
                    for await outcome in profile.subscriber(endpoint).registerUntilDone(stored) {
                        queue.push(.registration(outcome.record, userInitiated: false))
                        if outcome.record.state == .registered { self.registered() }
                    }
                }
            }
            self.receive(on: endpoint)
        }
    }

    /// Receives on `endpoint` until the receiver gives up (the hub refused). An open window
    /// starts the embedded hub again when it crashed, not when `hub stop` stopped it.
    func receive(on endpoint: HubEndpoint) {
        let queue = queue
        let receiver = InboxReceiver(
            sandbox: profile.sandbox(endpoint), log: profile.log, catalog: profile.catalog,
            follower: follower.withLock { $0 }, starting: .afterCrash)
        self.receiver.withLock { $0 = receiver }
        Task {
            for await status in receiver.statuses { queue.push(.inbox(.status(status))) }
            self.receiver.withLock { if $0 === receiver { $0 = nil } }
        }
    }

    /// The device is registered now: a stream the hub refused as not registered tries again.
    func registered() {
        receiver.withLock { $0 }?.retryNow()
    }

    static func describe(_ endpoint: HubEndpoint) -> String {
        let root = endpoint.listen.serviceRoot.replacingOccurrences(of: "https://", with: "").replacingOccurrences(
            of: "http://", with: "")
        return "\(endpoint.hubName) @ \(root.hasSuffix("/") ? String(root.dropLast()) : root)"
    }

    func perform(_ effect: Effect) {
        let profile = profile
        let queue = queue
        let endpointTask = endpoint.withLock { $0 }
        switch effect {
        case .subscribe(let categories):
            Task {
                let record = await profile.subscribe(categories, on: await endpointTask?.value)
                queue.push(.registration(record, userInitiated: true))
                if record.state == .registered { self.registered() }
            }
        case .send(let text, let categories):
            Task {
                guard let endpoint = await endpointTask?.value else {
                    queue.push(
                        .sent(categories.map { SendResultRow(category: $0, succeeded: false, detail: "no hub to send to") }))
                    return
                }
                do {
                    let results = try await profile.publisher(endpoint).send(text, to: categories)
                    queue.push(
                        .sent(
                            results.map { result in
                                switch result.result {
                                case .success(let receipt):
                                    return SendResultRow(
                                        category: result.category, succeeded: true, detail: receipt.notificationId ?? "",
                                        notificationId: receipt.notificationId)
                                case .failure(let error):
                                    return SendResultRow(category: result.category, succeeded: false, detail: "\(error)")
                                }
                            }))
                } catch {
                    queue.push(.sent(categories.map { SendResultRow(category: $0, succeeded: false, detail: "\(error)") }))
                }
            }
        case .explain(let id, let category):
            Task {
                let title = "Why: \(category) send"
                guard let endpoint = await endpointTask?.value else {
                    queue.push(.explained(title: title, lines: ["There is no hub to ask."], failed: true))
                    return
                }
                let (lines, failed) = await Explanation.fetch(id, from: endpoint)
                queue.push(.explained(title: title, lines: lines, failed: failed))
            }
        case .changeReadMarks(let change):
            // Off the screen's thread (the marks file is shared under a lock), one change after
            // another in the order they were made.
            let applied = appliedReadChanges
            marksQueue.async {
                profile.log.apply(change)
                applied.value += 1
            }
        case .reconnect:
            // A receiver waiting to try again tries now; one that gave up, or a hub that was
            // never settled, starts again.
            if let receiver = receiver.withLock({ $0 }) {
                receiver.retryNow()
                return
            }
            Task {
                if let endpoint = await endpointTask?.value { self.receive(on: endpoint) } else { self.connect() }
            }
        case .setAlert(let kind, let on):
            // Off the screen's thread, in the order switched; only the switch pressed, set in
            // what is on disk under the defaults' lock, so switches made in other windows stay.
            let stored = storedAlertSwitches
            defaultsQueue.async {
                _ = try? profile.store.update { $0.arrivalAlerts[kind] = on }
                stored.value += 1
            }
        case .alert, .quit:
            break  // The loop writes alerts after the frame.
        }
    }
}
