import BreakingNewsKit
import Foundation
import Synchronization

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

/// What a window writes to its home, in the order asked, by one owner (`TerminalApp.writer`).
enum HomeWrite: Sendable {
    case marks(ReadChange)
    /// Read the marks again (another process moved them) and tell the screen, with how many
    /// of this window's changes were applied when they were read.
    case reloadMarks
    case alertSwitch(ArrivalAlerts.Switch, on: Bool)
    /// Tell the screen what the home holds now, its alerts read again here, where this
    /// window's switches are stored: the count of those stored is exact for what was read.
    case shared(SharedHomeState)
    /// Claim the arrival alert up to this log position; won, `bytes` go to the terminal.
    case claimAlert(through: Int, bytes: String)
    case draft(String)
    /// Keep a send in the home's history.
    case remember(SentMessage)
}

/// The terminal UI. One thread owns the screen (curses: keys and drawing), since curses
/// reads block; everything else runs as structured tasks under `run`: a writer that owns
/// every write the window makes to its home, the log follower, the home watcher, the
/// connection (hub, registration, receiver), and one task per send, subscribe or
/// explanation. Each answers the screen with messages, so none blocks a key or a frame.
public final class TerminalApp: Sendable {
    let profile: NewsProfile
    let hubOptions: HubOptions
    let queue = MessageQueue()
    /// Alerts whose claim this window won, for the screen loop to write.
    let claimedAlerts = Mutex<[String]>([])
    /// The signal that ended the window, if one did.
    private let endingSignal = Mutex<Int32?>(nil)
    /// A program the user asked for (a browser, a piped command) has the terminal: Ctrl-C
    /// is its, not a quit.
    let externalRunning = Mutex(false)

    public init(profile: NewsProfile, hubOptions: HubOptions) {
        self.profile = profile
        self.hubOptions = hubOptions
    }

    /// The first state, from what is stored locally.
    func initialState(
        rows: Int, columns: Int, entries: [InboxEntry], config: UserConfig = UserConfig(), sent: [SentMessage] = []
    ) -> AppState {
        let marks = profile.log.marks
        var state = AppState(
            categories: profile.catalog.categories, selection: profile.selectedCategories,
            registration: profile.lastRegistration, items: entries, readMarks: marks.read, deleted: marks.deleted, rows: rows,
            columns: columns, warning: profile.warning, draft: profile.draft, sent: sent)
        state.alerts = profile.store.load().values.arrivalAlerts
        state.identity = profile.currentIdentity
        state.keyMap = config.keyMap
        state.confirmQuit = config.confirmQuit
        state.log.order = config.order
        if !config.problems.isEmpty, state.dialog == nil {
            state.dialog = Dialog(
                title: "config.json: entries refused, their defaults kept",
                message: config.problems.joined(separator: "\n"), isError: true)
        }
        return state
    }

    /// Runs the UI on the curses terminal until the user quits; returns the exit status: 0,
    /// or 128 + the signal for SIGTERM and SIGHUP (Ctrl-C is the UI's own quit key).
    public func run(mouse: Bool = false) async -> Int32 {
        let (effects, effectSink) = AsyncStream<Effect>.makeStream()
        let (writes, writeSink) = AsyncStream<HomeWrite>.makeStream()
        // What the preferences no longer keep goes before the window shows the log.
        profile.pruneReceivedLog()
        let entries = profile.log.entries
        let config = UserConfig.load(from: profile.paths.configFile)
        return await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.writer(writes) }
            group.addTask { await self.background(effects, writes: writeSink, shownThrough: entries.count) }
            let status = await withCheckedContinuation { continuation in
                let thread = Thread {
                    let terminal = CursesTerminal(mouse: mouse, colors: config.colors, hyperlinks: config.hyperlinks)
                    let status = self.loop(
                        terminal: terminal, entries: entries, config: config, effects: effectSink, writes: writeSink)
                    terminal.shutdown()
                    continuation.resume(returning: status)
                }
                thread.name = "screen"
                thread.start()
            }
            // The background ends with the screen; the writer once it wrote what is asked.
            effectSink.finish()
            writeSink.finish()
            await group.waitForAll()
            return status
        }
    }

    /// The screen loop; works on any terminal (tests use a virtual one).
    func loop(
        terminal: Terminal, entries: [InboxEntry], config: UserConfig = UserConfig(),
        effects: AsyncStream<Effect>.Continuation, writes: AsyncStream<HomeWrite>.Continuation
    ) -> Int32 {
        var size = terminal.size
        var state = initialState(
            rows: size.rows, columns: size.columns, entries: entries, config: config, sent: profile.sentHistory.load())
        Layout.render(state, on: terminal)
        // SIGINT, SIGTERM and SIGHUP become a quit message, so the terminal is always restored.
        let signals = SignalHandler([SIGINT, SIGTERM, SIGHUP]) { [self] number in
            if number == SIGINT, externalRunning.withLock({ $0 }) { return }
            endingSignal.withLock { $0 = $0 ?? number }
            queue.push(.quit)
        }
        defer { signals.cancel() }
        let insideTmux = Self.insideTmux(ProcessInfo.processInfo.environment)
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
                // First: what the others say is timed by the clock as it is now (a note after
                // minutes in an editor lasts its seconds from now, not from before).
                messages.insert(.tick(now), at: 0)
            }
            guard !messages.isEmpty else { continue }
            let before = state
            var asked: [Effect] = []
            for message in messages { asked += state.reduce(message) }
            for effect in asked { effects.yield(effect) }
            if state != before || messages.contains(where: { if case .resized = $0 { return true } else { return false } }) {
                Layout.render(state, on: terminal)
            }
            // After the frame, and once for all that arrived since the last one: a switch's
            // sample here and now; news once per home, by the window that claims it first.
            // A link to open, a copy, a pipe: on this thread, which owns the terminal.
            if runActions(asked, on: terminal, config: config) { Layout.render(state, on: terminal) }
            if let (alerts, text, _) = Effect.mergedAlert(asked, samples: true) {
                terminal.alert(AlertSequence.bytes(alerts, text: text, insideTmux: insideTmux))
            }
            if let (alerts, text, through) = Effect.mergedAlert(asked, samples: false), let through {
                writes.yield(
                    .claimAlert(through: through, bytes: AlertSequence.bytes(alerts, text: text, insideTmux: insideTmux)))
            }
        }
        // An unsent draft survives quitting.
        var draft = state.compose.text
        if state.compose.sending, draft.starts(with: state.compose.inFlight) {
            // What is being sent is not a draft: only what was typed after it is kept.
            draft = Array(draft.dropFirst(state.compose.inFlight.count).drop { $0 == " " })
        }
        writes.yield(.draft(String(draft)))
        switch endingSignal.withLock({ $0 }) {
        case SIGTERM?, SIGHUP?: return 128 + endingSignal.withLock { $0 ?? 0 }
        default: return 0
        }
    }

    /// Does the window's writes to its home, one after another in the order asked: the read
    /// and deleted marks, the alert switches and claims, the draft.
    func writer(_ writes: AsyncStream<HomeWrite>) async {
        // How many of this window's mark changes are on disk: exact for marks read here.
        var applied = 0
        // How many of this window's alert switches are on disk, likewise.
        var alertSwitches = 0
        for await write in writes {
            switch write {
            case .marks(let change):
                profile.log.apply(change)
                applied += 1
            case .reloadMarks:
                queue.push(.marks(profile.log.reloadMarks(), changesApplied: applied))
            case .alertSwitch(let kind, let on):
                // Only the switch pressed, set in what is on disk under the defaults' lock, so
                // switches made in other windows stay.
                _ = try? profile.store.update { $0.arrivalAlerts[kind] = on }
                alertSwitches += 1
            case .shared(var shared):
                shared.alerts = profile.store.load().values.arrivalAlerts
                queue.push(.shared(shared, alertSwitchesStored: alertSwitches))
            case .claimAlert(let through, let bytes):
                if profile.log.claimAlert(through: through) { claimedAlerts.withLock { $0.append(bytes) } }
            case .draft(let text):
                profile.saveDraft(text)
            case .remember(let sent):
                try? profile.sentHistory.append(sent)
            }
        }
    }

    static func describe(_ endpoint: HubEndpoint) -> String {
        let root = endpoint.listen.serviceRoot.replacingOccurrences(of: "https://", with: "").replacingOccurrences(
            of: "http://", with: "")
        return "\(endpoint.hubName) @ \(root.hasSuffix("/") ? String(root.dropLast()) : root)"
    }
}
